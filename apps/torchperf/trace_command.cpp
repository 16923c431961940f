// `torchperf trace`: a profiler trace (or a folder of ranks, or two traces with --diff) read,
// analysed and shown as tables, JSON or an HTML page.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "exit_codes.h"
#include "progress_bar.h"
#include "report_files.h"
#include "torchperf/error.h"
#include "torchperf/trace/trace_reader.h"
#include "torchperf/trace/trace_report.h"

namespace torchperf::cli {
namespace {

struct TraceFlags {
  std::vector<std::string> paths;
  bool diff = false, ops = false, kernels = false, launches = false, sequences = false;
  bool all = false;
  std::size_t sequence_length = kDefaultSequenceLength;
  bool by_shape = false, json = false, strict = false;
  std::size_t top = 15;
  std::string html;
};

// Reads one file and keeps only its analysis, so that the ranks of a folder are held one at a
// time.
TraceAnalysis read_and_analyze(const std::string& path, const TraceFlags& f, ProgressBar& bar,
                               const std::string& label) {
  TraceReadOptions options;
  options.strict = f.strict;
  const auto start = std::chrono::steady_clock::now();
  options.progress = [&](std::uint64_t done, std::uint64_t total) {
    if (total == 0) return;
    const double fraction = static_cast<double>(done) / static_cast<double>(total);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bar.show(fraction, "reading " + label, fraction > 0 ? elapsed / fraction * (1 - fraction) : 0);
  };
  Trace trace = read_trace(path, options);
  // Kernel sequences sort every device event: only for the outputs that show them.
  const bool sequences = f.sequences || f.all || f.json || !f.html.empty();
  TraceAnalysis analysis = analyze_trace(trace, f.by_shape, sequences ? f.sequence_length : 0);
  analysis.info.read_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return analysis;
}

}  // namespace

Runner add_trace_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "trace",
      "Read PyTorch profiler traces (Chrome-trace JSON, plain or gzip, of any size): where each "
      "step's time went, the device's idle time and its causes, operators, kernels, launches, "
      "advice; a folder compares its ranks, --diff two traces");
  auto f = std::make_shared<TraceFlags>();
  cmd->add_option("traces", f->paths,
                  "A trace file (.json, .json.gz), a folder of rank traces, or two traces with "
                  "--diff")
      ->required();
  cmd->add_flag("--diff", f->diff, "Compare two traces: before and after");
  cmd->add_flag("--ops", f->ops, "Show the operator view (host self and total time, device time)");
  cmd->add_flag("--kernels", f->kernels, "Show the kernel view (by name, class and share)");
  cmd->add_flag("--launches", f->launches,
                "Show launch statistics (CPU launch, GPU duration, delay, short kernels)");
  cmd->add_flag("--sequences", f->sequences,
                "Show frequent kernel sequences: runs of computation kernels that recur on a "
                "stream, by time (fusion candidates)");
  cmd->add_option("--sequence-length", f->sequence_length,
                  "Kernels in a sequence of --sequences")
      ->default_val(kDefaultSequenceLength)
      ->check(CLI::Range(2, 16));
  cmd->add_flag("--all", f->all, "Show every view");
  cmd->add_flag("--by-shape", f->by_shape, "Group operators by name and input dims");
  cmd->add_option("--top", f->top, "Rows of the operator, kernel, launch, sequence and diff tables")
      ->default_val(15)
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--json", f->json, "Print the analysis as JSON (torchperf.trace/2)");
  cmd->add_option("--html", f->html, "Also write an HTML page with the plots to this file");
  cmd->add_flag("--strict", f->strict,
                "An event with a missing or mistyped field, or ranks with different steps, is "
                "an error rather than skipped and counted");
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    if (f->diff && f->paths.size() != 2)
      throw UsageError(fmt::format("--diff compares two traces; got {} path(s)", f->paths.size()));
    if (f->by_shape) f->ops = true;
    TraceReportOptions options;
    options.operators = f->ops || f->all;
    options.kernels = f->kernels || f->all;
    options.launches = f->launches || f->all;
    options.sequences = f->sequences || f->all;
    options.by_shape = f->by_shape;
    options.top = f->top;

    std::vector<std::string> files;
    for (const std::string& p : f->paths) {
      const auto found = trace_files(p);
      if (f->diff && found.size() != 1)
        throw UsageError("--diff compares two trace files; '" + p + "' is a folder of " +
                         std::to_string(found.size()));
      files.insert(files.end(), found.begin(), found.end());
    }
    ProgressBar bar(isatty(STDERR_FILENO) != 0);
    TraceReport report;
    for (std::size_t i = 0; i < files.size(); ++i)
      report.traces.push_back(read_and_analyze(
          files[i], *f, bar,
          files.size() > 1 ? fmt::format("{} ({}/{})", files[i], i + 1, files.size()) : files[i]));
    bar.finish();
    if (f->diff)
      report.diff = diff_traces(report.traces[0], report.traces[1]);
    else if (report.traces.size() > 1)
      report.ranks = compare_ranks(report.traces, f->strict);
    if (!f->html.empty()) write_text_file(f->html, render_trace_html(report, options));
    if (f->json)
      std::cout << to_json(report, options).dump(2) << "\n";
    else
      std::cout << format_trace_report(report, options);
    if (!f->html.empty() && !f->json) std::cout << "wrote " << f->html << "\n";
    return kSuccess;
  };
}

}  // namespace torchperf::cli
