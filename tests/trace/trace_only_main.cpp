// A program on the trace library alone, with no LibTorch on its link line: that it links at all,
// and that ldd finds no libtorch or libc10 in it, is the test that `trace` needs no LibTorch
// (design.md: it reads traces from any machine). It prints the report of the trace it is given.
#include <iostream>

#include "torchperf/trace/trace_analysis.h"
#include "torchperf/trace/trace_reader.h"
#include "torchperf/trace/trace_report.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: torchperf_trace_only TRACE\n";
    return 2;
  }
  torchperf::TraceReport report;
  report.traces.push_back(torchperf::analyze_trace(torchperf::read_trace(argv[1])));
  std::cout << torchperf::format_trace_report(report, {});
  return 0;
}
