// One trace analysed: what was read (the file, its form, devices, what was skipped) and every
// view of it, kept without the events so that a folder of large ranks is analysed one rank at a
// time. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "torchperf/trace/trace.h"
#include "torchperf/trace/trace_overview.h"
#include "torchperf/trace/trace_views.h"
#include "torchperf/advice/advice.h"

namespace torchperf {

struct TraceInfo {
  std::string path, form;
  int rank = -1, world_size = 0;
  std::string backend;
  std::vector<DeviceInfo> devices;
  std::uint64_t events = 0, ignored = 0, host_events = 0, device_events = 0, threads = 0;
  TraceSkips skips;
  std::uint64_t file_bytes = 0, json_bytes = 0;
  bool compressed = false;
  double read_seconds = 0;  // set by the caller that timed the read
};

struct TraceAnalysis {
  TraceInfo info;
  TraceOverview overview;
  std::vector<OperatorRow> operators;
  std::vector<KernelRow> kernels;
  std::vector<CopyRow> copies;
  LaunchStats launches;
  std::vector<SequenceRow> sequences;  // of sequence_length kernels (none for 0)
  std::size_t sequence_length = 0;
  std::vector<Advice> advice;
};

// HTA's frequent-pattern analysis looks for runs of 3 kernels or more: its default length.
inline constexpr std::size_t kDefaultSequenceLength = 3;

TraceAnalysis analyze_trace(const Trace& trace, bool operators_by_shape = false,
                            std::size_t sequence_length = kDefaultSequenceLength);

}  // namespace torchperf
