// What `trace` shows: terminal tables (overview per step and on average, device time and its
// idle causes, advice, and on request operators, kernels and launch statistics), the ranks of a
// folder side by side, a diff of two traces, the same as JSON (torchperf.trace/2,
// docs/report-schema.md) and an HTML page on report's page machinery.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/page/html_page.h"
#include "torchperf/page/text_table.h"
#include "torchperf/trace/trace_analysis.h"
#include "torchperf/trace/trace_diff.h"
#include "torchperf/trace/trace_ranks.h"

namespace torchperf {

struct TraceReportOptions {
  bool operators = false, kernels = false, launches = false, sequences = false;
  bool by_shape = false;
  std::size_t top = 15;        // rows of the operator, kernel and launch tables (and their JSON)
  std::size_t step_rows = 20;  // steps listed before "…" in the terminal (JSON lists all)
};

struct TraceReport {
  std::vector<TraceAnalysis> traces;  // one, or one per rank
  std::optional<RankComparison> ranks;
  std::optional<TraceDiff> diff;  // traces[0] before, traces[1] after
};

TextTable step_table(const TraceOverview& overview, std::size_t max_rows);
TextTable step_device_table(const TraceOverview& overview, std::size_t max_rows);
TextTable device_summary_table(const DeviceSummary& device);
TextTable stream_table(const DeviceSummary& device);
std::string attribution_line(const TraceOverview& overview);
std::string class_overlap_line(const DeviceSummary& device);
TextTable operator_table(const std::vector<OperatorRow>& rows, std::size_t top, bool by_shape);
TextTable kernel_table(const std::vector<KernelRow>& rows, std::size_t top);
TextTable copy_table(const std::vector<CopyRow>& rows);
TextTable launch_table(const LaunchStats& stats, std::size_t top);
TextTable sequence_table(const std::vector<SequenceRow>& rows, std::size_t top);
TextTable rank_table(const RankComparison& ranks);
TextTable diff_step_table(const TraceDiff& diff);
TextTable diff_rows_table(const std::vector<DiffRow>& rows, std::size_t top);

std::string format_trace_report(const TraceReport& report, const TraceReportOptions& options);
nlohmann::json to_json(const TraceReport& report, const TraceReportOptions& options);
std::vector<Panel> trace_panels(const TraceReport& report, const TraceReportOptions& options);
std::string render_trace_html(const TraceReport& report, const TraceReportOptions& options);

}  // namespace torchperf
