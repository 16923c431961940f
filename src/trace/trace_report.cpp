#include "torchperf/trace/trace_report.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "torchperf/json_fields.h"
#include "torchperf/advice/advice.h"
#include "torchperf/page/html_page.h"
#include "torchperf/page/text_table.h"

namespace torchperf {
namespace {

std::string ms(double ns) { return fmt::format("{:.2f}", ns * 1e-6); }
std::string us(double ns) { return fmt::format("{:.1f}", ns * 1e-3); }
std::string mb(double bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

// Kernel names run to hundreds of characters of template arguments; a table shows the head.
std::string shorten(const std::string& name, std::size_t width = 70) {
  if (name.size() <= width) return name;
  return name.substr(0, width - 3) + "...";
}

// A kernel's function name without "void", template arguments, parameters or namespaces:
// "void at::native::vectorized_elementwise_kernel<4, …>(…)" is "vectorized_elementwise_kernel".
std::string function_name(const std::string& kernel) {
  std::string plain = kernel;
  for (auto at = plain.find("(anonymous namespace)::"); at != std::string::npos;
       at = plain.find("(anonymous namespace)::"))
    plain.erase(at, 23);
  std::string_view n = plain;
  if (n.rfind("void ", 0) == 0) n.remove_prefix(5);
  n = n.substr(0, std::min(n.find('<'), n.find('(')));
  const auto colon = n.rfind("::");
  if (colon != std::string_view::npos && colon + 2 < n.size()) n.remove_prefix(colon + 2);
  return n.empty() ? kernel : std::string(n);
}

std::string step_label(const StepBreakdown& s) {
  return s.number < 0 ? std::string("trace") : "#" + std::to_string(s.number);
}

std::vector<std::string> step_row(const std::string& label, const StepBreakdown& s) {
  std::vector<std::string> row = {label, ms(s.duration())};
  for (double t : s.time) row.push_back(ms(t));
  row.push_back(s.has_device ? percent(s.utilization()) : "-");
  return row;
}

std::string describe_info(const TraceInfo& i) {
  std::string line = fmt::format("{}: {} form, {} of JSON", i.path,
                                 i.form == "kineto" ? "Kineto" : "array (no Kineto)",
                                 mb(static_cast<double>(i.json_bytes)));
  if (i.compressed) line += fmt::format(" ({} gzip)", mb(static_cast<double>(i.file_bytes)));
  line += fmt::format(", {} events ({} host, {} device, {} others ignored", i.events, i.host_events,
                      i.device_events, i.ignored);
  if (i.skips.total() > 0) line += fmt::format(", {} skipped", i.skips.total());
  line += ")";
  if (i.read_seconds > 0) line += fmt::format(", read in {:.2f} s", i.read_seconds);
  return line;
}

std::string describe_devices(const TraceInfo& i) {
  std::string line;
  if (!i.devices.empty()) {
    const DeviceInfo& d = i.devices.front();
    line = fmt::format(
        "device {} (compute {}.{}, {:.0f} GB){}", d.name, d.compute_major, d.compute_minor,
        static_cast<double>(d.memory_bytes) / 1e9,
        i.devices.size() > 1 ? fmt::format(" x{} on the machine", i.devices.size()) : "");
  } else {
    line = "no device properties (a CPU-only or older trace)";
  }
  if (i.rank >= 0)
    line += fmt::format("; rank {}{}{}", i.rank,
                        i.world_size > 0 ? fmt::format(" of {}", i.world_size) : "",
                        i.backend.empty() ? "" : " (" + i.backend + ")");
  return line;
}

std::string describe_steps(const TraceOverview& o) {
  if (!o.annotated_steps)
    return "steps: no ProfilerStep annotations; the whole trace is one window";
  return fmt::format("steps: {} (#{} to #{}), {} ms on average", o.steps.size(),
                     o.steps.front().number, o.steps.back().number, ms(o.average.duration()));
}

std::string skipped_line(const TraceInfo& i) {
  if (i.skips.total() == 0) return "";
  return fmt::format(
      "skipped: {} events ({} missing a field, {} of a wrong type, {} not JSON); "
      "the first: {} (--strict makes this an error)\n",
      i.skips.total(), i.skips.missing_field, i.skips.wrong_type, i.skips.malformed,
      i.skips.first_problem);
}

std::string format_one(const TraceAnalysis& a, const TraceReportOptions& options) {
  std::string out = "trace " + describe_info(a.info) + "\n" + describe_devices(a.info) + "\n" +
                    describe_steps(a.overview) + "\n" + skipped_line(a.info);
  out += "\nstep time breakdown (ms; each instant counted once, in the columns' order)\n";
  out += step_table(a.overview, options.step_rows).render(TextFormat::kTerminal);
  if (a.overview.has_device) {
    out += "\ndevice work per step (ms; each device event in the step whose host code launched "
           "it; lag: how long after the host the device finished the step; gaps: the idle gaps "
           "on the streams by cause)\n";
    out += step_device_table(a.overview, options.step_rows).render(TextFormat::kTerminal);
    out += attribution_line(a.overview);
    out += "\ndevice summary over " +
           std::string(a.overview.annotated_steps ? "the steps' device work" : "the trace") +
           " (Holistic Trace Analysis's definitions)\n";
    out += device_summary_table(a.overview.device).render(TextFormat::kTerminal);
    out += class_overlap_line(a.overview.device);
    out += stream_table(a.overview.device).render(TextFormat::kTerminal);
  }
  if (!a.advice.empty())
    out += "\nadvice (* changes what is learned: batch size or precision)\n" +
           advice_table(a.advice).render(TextFormat::kTerminal);
  else
    out += "\nadvice: no rule fires\n";
  if (options.operators)
    out += fmt::format(
               "\noperators ({} of {}, by host self time; device: kernels they "
               "launched)\n",
               std::min(options.top, a.operators.size()), a.operators.size()) +
           operator_table(a.operators, options.top, options.by_shape).render(TextFormat::kTerminal);
  if (options.kernels) {
    const KernelClassTotals t = kernel_class_totals(a.kernels);
    const double all = std::max(1.0, t.computation + t.communication + t.memory);
    out += fmt::format("\nkernels ({} of {}; computation {}, communication {}, memory {})\n",
                       std::min(options.top, a.kernels.size()), a.kernels.size(),
                       percent(t.computation / all), percent(t.communication / all), percent(t.memory / all)) +
           kernel_table(a.kernels, options.top).render(TextFormat::kTerminal);
    if (!a.copies.empty())
      out += "\ncopies and sets (bandwidth: bytes over their time on the device)\n" +
             copy_table(a.copies).render(TextFormat::kTerminal);
  }
  if (options.launches) {
    const LaunchStats& l = a.launches;
    out += fmt::format(
        "\nlaunches: {} of {} kernels launched one by one with their launch in the trace; {} "
        "short (shorter than their launch); {} launches over {:.0f} us, {} delays over {:.0f} "
        "us; launch median {} us (p90 {}), kernel median {} us (p90 {}), delay from the "
        "launch's end median {} us (p90 {}, max {})\n",
        l.matched, l.kernels, l.short_kernels, l.runtime_outliers, kRuntimeOutlierNs * 1e-3,
        l.delay_outliers, kDelayOutlierNs * 1e-3, us(l.launch.median), us(l.launch.p90),
        us(l.gpu.median), us(l.gpu.p90), us(l.delay.median), us(l.delay.p90), us(l.delay.max));
    if (!l.rows.empty()) out += launch_table(l, options.top).render(TextFormat::kTerminal);
  }
  if (options.sequences) {
    out += fmt::format(
        "\nkernel sequences ({} of {} runs of {} computation kernels seen twice or more on a "
        "stream, by time: what torch.compile or a CUDA graph would fuse or launch as one)\n",
        std::min(options.top, a.sequences.size()), a.sequences.size(), a.sequence_length);
    if (!a.sequences.empty())
      out += sequence_table(a.sequences, options.top).render(TextFormat::kTerminal);
  }
  return out;
}

nlohmann::json idle_causes_json(double host_wait, double kernel_wait, double other_wait) {
  return {{"host_wait", host_wait * 1e-6},
          {"kernel_wait", kernel_wait * 1e-6},
          {"other_wait", other_wait * 1e-6}};
}

nlohmann::json device_summary_json(const DeviceSummary& d, bool streams) {
  nlohmann::json classes = nlohmann::json::object(), overlaps = nlohmann::json::object();
  for (std::size_t c = 0; c < kKernelClasses; ++c)
    classes[kernel_class_name(static_cast<KernelClass>(c))] = d.class_time[c] * 1e-6;
  for (std::size_t m = 1; m < d.class_overlap.size(); ++m)
    overlaps[class_overlap_name(m)] = d.class_overlap[m] * 1e-6;
  nlohmann::json j = {
      {"events", d.events()},
      {"kernels", d.kernels},
      {"memcpys", d.memcpys},
      {"memsets", d.memsets},
      {"class_ms", classes},
      {"class_overlap_ms", overlaps},
      {"span_ms", d.span() * 1e-6},
      {"temporal_ms",
       {{"busy", d.busy * 1e-6},
        {"compute", d.compute * 1e-6},
        {"non_compute", d.non_compute * 1e-6},
        {"idle", d.idle * 1e-6}}},
      {"idle_causes_ms", idle_causes_json(d.host_wait, d.kernel_wait, d.other_wait)},
      {"communication_ms", d.communication * 1e-6},
      {"communication_overlap",
       d.overlap() < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.overlap())}};
  if (streams) {
    nlohmann::json rows = nlohmann::json::array();
    for (const StreamSummary& x : d.streams)
      rows.push_back({{"device", x.device},
                      {"stream", x.stream},
                      {"events", x.events},
                      {"idle_causes_ms", idle_causes_json(x.host_wait, x.kernel_wait, x.other_wait)},
                      {"queue_length",
                       {{"max", x.max_queue},
                        {"mean", x.mean_queue},
                        {"mean_over_changes", x.mean_queue_over_changes}}}});
    j["streams"] = rows;
  }
  return j;
}

nlohmann::json step_json(const StepBreakdown& s, bool annotated) {
  nlohmann::json categories = nlohmann::json::object();
  for (std::size_t c = 0; c < kTimeCategories; ++c)
    categories[category_key(static_cast<TimeCategory>(c))] = s.time[c] * 1e-6;
  nlohmann::json j = {{"step", s.number < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.number)},
                      {"ms", s.duration() * 1e-6},
                      {"categories_ms", categories}};
  if (s.has_device) {
    j["device_utilization"] = nullable(s.utilization());
    // A lag is behind a step's host range: the whole-trace window has none.
    j["lag_ms"] = annotated ? nlohmann::json(s.lag() * 1e-6) : nlohmann::json(nullptr);
    j["device"] = device_summary_json(s.device, false);
  }
  return j;
}

// trace_json's tables, each cut at --top where it is long.
nlohmann::json devices_json(const TraceInfo& i) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceInfo& d : i.devices)
    devices.push_back({{"id", d.id},
                       {"name", d.name},
                       {"compute", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                       {"memory_bytes", d.memory_bytes},
                       {"matrix_units", d.has_matrix_units()}});
  return devices;
}

nlohmann::json operators_json(const TraceAnalysis& a, const TraceReportOptions& options) {
  nlohmann::json operators = nlohmann::json::array();
  for (std::size_t k = 0; k < a.operators.size() && k < options.top; ++k) {
    const OperatorRow& r = a.operators[k];
    nlohmann::json row = {{"name", r.name},
                          {"calls", r.calls},
                          {"host_self_ms", r.host_self * 1e-6},
                          {"host_total_ms", r.host_total * 1e-6},
                          {"device_ms", r.device_total * 1e-6}};
    if (options.by_shape) row["input_dims"] = r.shapes;
    operators.push_back(row);
  }
  return operators;
}

nlohmann::json kernels_json(const TraceAnalysis& a, const TraceReportOptions& options) {
  nlohmann::json kernels = nlohmann::json::array();
  for (std::size_t k = 0; k < a.kernels.size() && k < options.top; ++k) {
    const KernelRow& r = a.kernels[k];
    kernels.push_back({{"name", r.name},
                       {"class", kernel_class_name(r.kind)},
                       {"count", r.count},
                       {"total_ms", r.total * 1e-6},
                       {"mean_us", r.mean() * 1e-3},
                       {"max_us", r.max * 1e-3},
                       {"share", r.share}});
  }
  return kernels;
}

nlohmann::json launches_json(const LaunchStats& l, const TraceReportOptions& options) {
  const auto dist = [](const Distribution& d) {
    return nlohmann::json{
        {"median_us", d.median * 1e-3}, {"p90_us", d.p90 * 1e-3}, {"max_us", d.max * 1e-3}};
  };
  nlohmann::json launch_rows = nlohmann::json::array();
  for (std::size_t k = 0; k < l.rows.size() && k < options.top; ++k) {
    const LaunchRow& r = l.rows[k];
    const double n = static_cast<double>(std::max<std::uint64_t>(1, r.count));
    launch_rows.push_back({{"name", r.name},
                           {"count", r.count},
                           {"short", r.short_kernels},
                           {"launch_mean_us", r.launch_total / n * 1e-3},
                           {"kernel_mean_us", r.gpu_total / n * 1e-3},
                           {"delay_mean_us", r.delay_total / n * 1e-3}});
  }
  return {{"kernels", l.kernels},
          {"matched", l.matched},
          {"short", l.short_kernels},
          {"runtime_outliers", l.runtime_outliers},
          {"delay_outliers", l.delay_outliers},
          {"launch", dist(l.launch)},
          {"kernel", dist(l.gpu)},
          {"delay", dist(l.delay)},
          {"rows", launch_rows}};
}

nlohmann::json copies_json(const TraceAnalysis& a) {
  nlohmann::json copies = nlohmann::json::array();
  for (const CopyRow& r : a.copies)
    copies.push_back({{"kind", r.kind},
                      {"count", r.count},
                      {"bytes", r.bytes},
                      {"ms", r.time * 1e-6},
                      {"gb_per_s", r.gigabytes_per_second()}});
  return copies;
}

nlohmann::json sequences_json(const TraceAnalysis& a, const TraceReportOptions& options) {
  nlohmann::json sequences = nlohmann::json::array();
  for (std::size_t k = 0; k < a.sequences.size() && k < options.top; ++k) {
    const SequenceRow& r = a.sequences[k];
    sequences.push_back({{"kernels", r.kernels},
                         {"count", r.count},
                         {"kernel_ms", r.kernel_time * 1e-6},
                         {"gap_ms", r.gap_time * 1e-6}});
  }
  return sequences;
}

nlohmann::json advice_rows_json(const TraceAnalysis& a) {
  nlohmann::json advice = nlohmann::json::array();
  for (const Advice& x : a.advice)
    advice.push_back({{"rule", x.rule},
                      {"advice", x.message},
                      {"evidence", x.evidence},
                      {"knob", x.knob},
                      {"value", x.value},
                      {"changes_training", x.changes_training},
                      {"weight", x.weight}});
  return advice;
}

nlohmann::json trace_json(const TraceAnalysis& a, const TraceReportOptions& options) {
  const TraceInfo& i = a.info;
  nlohmann::json steps = nlohmann::json::array();
  for (const StepBreakdown& s : a.overview.steps)
    steps.push_back(step_json(s, a.overview.annotated_steps));
  nlohmann::json average = step_json(a.overview.average, a.overview.annotated_steps);
  average.erase("step");
  const KernelClassTotals totals = kernel_class_totals(a.kernels);
  return {
      {"path", i.path},
      {"form", i.form},
      {"rank", i.rank < 0 ? nlohmann::json(nullptr) : nlohmann::json(i.rank)},
      {"world_size", i.world_size},
      {"backend", i.backend},
      {"devices", devices_json(i)},
      {"file_bytes", i.file_bytes},
      {"json_bytes", i.json_bytes},
      {"compressed", i.compressed},
      {"read_seconds", i.read_seconds},
      {"events",
       {{"total", i.events},
        {"host", i.host_events},
        {"device", i.device_events},
        {"ignored", i.ignored},
        {"skipped",
         {{"missing_field", i.skips.missing_field},
          {"wrong_type", i.skips.wrong_type},
          {"malformed", i.skips.malformed},
          {"first", i.skips.first_problem}}}}},
      {"annotated_steps", a.overview.annotated_steps},
      {"steps", steps},
      {"average", average},
      {"device", device_summary_json(a.overview.device, true)},
      {"outside_steps",
       {{"events", a.overview.outside.events()},
        {"no_launch", a.overview.outside_where.no_launch},
        {"before", a.overview.outside_where.before},
        {"between", a.overview.outside_where.between},
        {"after", a.overview.outside_where.after},
        {"device", device_summary_json(a.overview.outside, false)}}},
      {"operators", operators_json(a, options)},
      {"operators_total", a.operators.size()},
      {"kernels", kernels_json(a, options)},
      {"kernels_total", a.kernels.size()},
      {"copies", copies_json(a)},
      {"kernel_classes_ms",
       {{"computation", totals.computation * 1e-6},
        {"communication", totals.communication * 1e-6},
        {"memory", totals.memory * 1e-6}}},
      {"launches", launches_json(a.launches, options)},
      {"sequences",
       {{"length", a.sequence_length},
        {"total", a.sequences.size()},
        {"rows", sequences_json(a, options)}}},
      {"advice", advice_rows_json(a)}};
}

nlohmann::json diff_rows_json(const std::vector<DiffRow>& rows, std::size_t top) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t k = 0; k < rows.size() && k < top; ++k) {
    const DiffRow& r = rows[k];
    if (r.change == Change::kSame) break;
    out.push_back({{"name", r.name},
                   {"kind", r.kind},
                   {"change", change_name(r.change)},
                   {"before_ms_per_step", r.before * 1e-6},
                   {"after_ms_per_step", r.after * 1e-6},
                   {"calls_before_per_step", r.calls_before},
                   {"calls_after_per_step", r.calls_after}});
  }
  return out;
}

nlohmann::json change_counts(const std::vector<DiffRow>& rows) {
  nlohmann::json counts = {{"added", 0}, {"removed", 0}, {"slower", 0}, {"faster", 0}, {"same", 0}};
  for (const DiffRow& r : rows)
    counts[change_name(r.change)] = counts[change_name(r.change)].get<int>() + 1;
  return counts;
}

std::string count_line(const std::vector<DiffRow>& rows) {
  int added = 0, removed = 0, slower = 0, faster = 0, same = 0;
  for (const DiffRow& r : rows) {
    switch (r.change) {
      case Change::kAdded:
        ++added;
        break;
      case Change::kRemoved:
        ++removed;
        break;
      case Change::kSlower:
        ++slower;
        break;
      case Change::kFaster:
        ++faster;
        break;
      case Change::kSame:
        ++same;
        break;
    }
  }
  return fmt::format("{} added, {} removed, {} slower, {} faster, {} about the same", added,
                     removed, slower, faster, same);
}

const char* const kCategoryColours[] = {"#1f77b4", "#9467bd", "#ff7f0e", "#ffbb78",
                                        "#d62728", "#8c564b", "#2ca02c", "#c7c7c7"};

// Horizontal bars, each split into parts stacked in one order: a step's time categories, its
// idle causes.
struct StackedBars {
  std::string id, title, caption, axis;
  std::string legend;  // what a part is ("category", "cause"): the colour's field
  std::vector<std::string> parts, colours;
  std::vector<std::pair<std::string, std::vector<double>>> bars;  // label, ms per part
};

Panel stacked_panel(const StackedBars& s) {
  nlohmann::json values = nlohmann::json::array();
  for (std::size_t b = 0; b < s.bars.size(); ++b) {
    const std::vector<double>& ms = s.bars[b].second;
    double total = 0;
    for (double x : ms) total += x;
    for (std::size_t c = 0; c < s.parts.size(); ++c)
      values.push_back({{"bar", s.bars[b].first},
                        {"order", b},
                        {s.legend, s.parts[c]},
                        {"part_order", c},
                        {"ms", ms[c]},
                        {"share", total > 0 ? ms[c] / total : 0}});
  }
  Panel p;
  p.id = s.id;
  p.title = s.title;
  p.caption = s.caption;
  p.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
      {"title", s.title},
      {"width", 600},
      {"data", {{"values", values}}},
      {"mark", {{"type", "bar"}, {"tooltip", true}}},
      {"encoding",
       {{"y",
         {{"field", "bar"},
          {"type", "nominal"},
          {"title", nullptr},
          {"sort", {{"field", "order"}}}}},
        {"x", {{"field", "ms"}, {"type", "quantitative"}, {"stack", "zero"}, {"title", s.axis}}},
        {"color",
         {{"field", s.legend},
          {"type", "nominal"},
          {"scale", {{"domain", s.parts}, {"range", s.colours}}}}},
        {"order", {{"field", "part_order"}}},
        {"tooltip",
         {{{"field", "bar"}},
          {{"field", s.legend}},
          {{"field", "ms"}, {"format", ".3f"}},
          {{"field", "share"}, {"format", ".1%"}}}}}}};
  p.expected_marks = {{"rect", static_cast<int>(values.size())}};
  return p;
}

Panel stacked_steps_panel(const std::string& id, const std::string& title,
                          const std::string& caption,
                          const std::vector<std::pair<std::string, StepBreakdown>>& bars) {
  StackedBars s{id, title, caption, "ms", "category", {}, {}, {}};
  for (std::size_t c = 0; c < kTimeCategories; ++c)
    s.parts.push_back(category_name(static_cast<TimeCategory>(c)));
  s.colours.assign(std::begin(kCategoryColours), std::end(kCategoryColours));
  for (const auto& [label, step] : bars) {
    std::vector<double> ms;
    for (std::size_t c = 0; c < kTimeCategories; ++c) ms.push_back(step.time[c] * 1e-6);
    s.bars.emplace_back(label, ms);
  }
  return stacked_panel(s);
}

Panel bars_panel(const std::string& id, const std::string& title, const std::string& caption,
                 const std::string& axis, const std::vector<std::pair<std::string, double>>& bars,
                 const std::string& colour_field = "",
                 const std::vector<std::string>& colours = {}) {
  nlohmann::json values = nlohmann::json::array();
  for (std::size_t b = 0; b < bars.size(); ++b)
    // Numbered: two long names can shorten to the same label, and a label is a row.
    values.push_back({{"name", fmt::format("{}. {}", b + 1, shorten(bars[b].first, 56))},
                      {"full_name", bars[b].first},
                      {"order", b},
                      {"value", bars[b].second},
                      {"group", colours.empty() ? "" : colours[b]}});
  Panel p;
  p.id = id;
  p.title = title;
  p.caption = caption;
  nlohmann::json encoding = {{"y",
                              {{"field", "name"},
                               {"type", "nominal"},
                               {"title", nullptr},
                               {"sort", {{"field", "order"}}}}},
                             {"x", {{"field", "value"}, {"type", "quantitative"}, {"title", axis}}},
                             {"tooltip",
                              {{{"field", "full_name"}, {"title", "name"}},
                               {{"field", "value"}, {"format", ".3f"}, {"title", axis}}}}};
  if (!colour_field.empty())
    encoding["color"] = {{"field", "group"}, {"type", "nominal"}, {"title", colour_field}};
  p.spec = {{"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
            {"title", title},
            {"width", 520},
            {"data", {{"values", values}}},
            {"mark", {{"type", "bar"}, {"tooltip", true}}},
            {"encoding", encoding}};
  p.expected_marks = {{"rect", static_cast<int>(values.size())}};
  return p;
}

Panel idle_panel(const TraceAnalysis& a) {
  StackedBars s{"idle",
                "Why the device was idle",
                "Idle time on the streams between the device events each step launched, by "
                "cause: host wait (the next event was not yet launched), kernel wait (a gap "
                "under 30 us with the next event queued), other (waits on events, other "
                "streams).",
                "idle ms",
                "cause",
                {"host wait", "kernel wait", "other wait"},
                {"#d62728", "#ff7f0e", "#7f7f7f"},
                {}};
  const auto add = [&](const std::string& label, const StepBreakdown& step) {
    s.bars.emplace_back(label, std::vector<double>{step.device.host_wait * 1e-6,
                                                   step.device.kernel_wait * 1e-6,
                                                   step.device.other_wait * 1e-6});
  };
  for (const StepBreakdown& step : a.overview.steps) add(step_label(step), step);
  if (a.overview.steps.size() > 1) add("mean", a.overview.average);
  return stacked_panel(s);
}

std::string rank_label(const TraceAnalysis& a, std::size_t index) {
  return "rank " + std::to_string(a.info.rank >= 0 ? a.info.rank : static_cast<int>(index));
}

}  // namespace

TextTable step_table(const TraceOverview& o, std::size_t max_rows) {
  TextTable t;
  t.header = {"step", "total"};
  for (std::size_t c = 0; c < kTimeCategories; ++c)
    t.header.push_back(category_name(static_cast<TimeCategory>(c)));
  t.header.push_back("device util");
  const std::size_t n = o.steps.size();
  for (std::size_t k = 0; k < n; ++k) {
    // Long traces: the first and last steps, with the mean below.
    if (n > max_rows && k == max_rows / 2) {
      t.rows.push_back({fmt::format("... {} more", n - max_rows)});
      k = n - (max_rows - max_rows / 2) - 1;
      continue;
    }
    t.rows.push_back(step_row(step_label(o.steps[k]), o.steps[k]));
  }
  if (n > 1) t.rows.push_back(step_row("mean", o.average));
  std::vector<std::string> share = {"share", "100%"};
  for (std::size_t c = 0; c < kTimeCategories; ++c)
    share.push_back(percent(o.average.share(static_cast<TimeCategory>(c))));
  share.push_back("");
  t.rows.push_back(share);
  return t;
}

// The causes of the gaps on the streams, each as a share of all of them: with several streams
// the gaps add up to more than the device's idle time, so a share is what compares.
std::array<std::string, 3> gap_shares(const DeviceSummary& d) {
  const double gaps = d.host_wait + d.kernel_wait + d.other_wait;
  if (gaps <= 0) return {"-", "-", "-"};
  return {percent(d.host_wait / gaps), percent(d.kernel_wait / gaps), percent(d.other_wait / gaps)};
}

TextTable step_device_table(const TraceOverview& o, std::size_t max_rows) {
  TextTable t;
  t.header = {"step",        "host span",     "device span", "lag",  "events",
              "computation", "communication", "memory",      "idle", "gaps: host wait",
              "kernel wait", "other wait"};
  const auto row = [](const std::string& label, const StepBreakdown& s, bool host) {
    const DeviceSummary& d = s.device;
    const auto shares = gap_shares(d);
    return std::vector<std::string>{label,
                                    host ? ms(s.duration()) : "-",
                                    ms(d.span()),
                                    host && !d.empty() ? ms(s.lag()) : "-",
                                    std::to_string(d.events()),
                                    ms(d.class_time[0]),
                                    ms(d.class_time[1]),
                                    ms(d.class_time[2]),
                                    ms(d.idle),
                                    shares[0],
                                    shares[1],
                                    shares[2]};
  };
  const std::size_t n = o.steps.size();
  for (std::size_t k = 0; k < n; ++k) {
    if (n > max_rows && k == max_rows / 2) {
      t.rows.push_back({fmt::format("... {} more", n - max_rows)});
      k = n - (max_rows - max_rows / 2) - 1;
      continue;
    }
    t.rows.push_back(row(step_label(o.steps[k]), o.steps[k], o.annotated_steps));
  }
  if (n > 1) t.rows.push_back(row("mean", o.average, o.annotated_steps));
  if (o.annotated_steps && !o.outside.empty()) {
    StepBreakdown outside;
    outside.device = o.outside;
    t.rows.push_back(row("outside", outside, false));
  }
  return t;
}

std::string attribution_line(const TraceOverview& o) {
  if (!o.annotated_steps) return "";
  const std::string how = o.by_device_start
                              ? "  the trace has no runtime calls to follow: each device event is "
                                "in the step in which it starts\n"
                              : "";
  std::uint64_t in_steps = 0;
  for (const StepBreakdown& s : o.steps) in_steps += s.device.events();
  const OutsideSteps& w = o.outside_where;
  std::string line = fmt::format("  {} device events: {} launched in steps, {} outside steps",
                                 in_steps + w.total(), in_steps, w.total());
  if (w.total() > 0) {
    std::vector<std::string> parts;
    if (w.no_launch > 0) parts.push_back(fmt::format("{} whose launch is not in the trace", w.no_launch));
    if (w.before > 0) parts.push_back(fmt::format("{} launched before the first step", w.before));
    if (w.between > 0) parts.push_back(fmt::format("{} between steps", w.between));
    if (w.after > 0) parts.push_back(fmt::format("{} after the last step", w.after));
    line += " (";
    for (std::size_t k = 0; k < parts.size(); ++k) line += (k > 0 ? ", " : "") + parts[k];
    line += ")";
  }
  return line + "\n" + how;
}

TextTable device_summary_table(const DeviceSummary& d) {
  TextTable t;
  // Busy, compute, non-compute and idle are shares of the span; the causes, of the gaps on the
  // streams (streams overlap, so their gaps add up to more than the device's idle time).
  t.header = {"events", "span",            "busy",        "compute",    "non-compute",
              "idle",   "gaps: host wait", "kernel wait", "other wait", "comm. overlapped"};
  const double span = std::max(1.0, d.span());
  const auto shares = gap_shares(d);
  t.rows.push_back({fmt::format("{} ({} kernels, {} copies, {} sets)", d.events(), d.kernels,
                                d.memcpys, d.memsets),
                    ms(d.span()) + " ms",
                    percent(d.busy / span),
                    percent(d.compute / span),
                    percent(d.non_compute / span),
                    percent(d.idle / span),
                    shares[0],
                    shares[1],
                    shares[2],
                    d.overlap() < 0 ? "-" : percent(d.overlap())});
  return t;
}

std::string class_overlap_line(const DeviceSummary& d) {
  std::string line = "  busy time by kernel class (ms):";
  bool any = false;
  for (std::size_t m = 1; m < d.class_overlap.size(); ++m)
    if (d.class_overlap[m] > 0) {
      line += fmt::format(" {} {};", class_overlap_name(m), ms(d.class_overlap[m]));
      any = true;
    }
  if (!any) return "";
  line.back() = '\n';
  return line;
}

TextTable stream_table(const DeviceSummary& d) {
  TextTable t;
  t.header = {"device/stream", "events",    "gaps ms",     "host wait",
              "kernel wait",   "other wait", "queue: max", "mean"};
  for (const StreamSummary& x : d.streams)
    t.rows.push_back({fmt::format("{}/{}", x.device, x.stream < 0 ? std::string("?")
                                                                  : std::to_string(x.stream)),
                      std::to_string(x.events), ms(x.idle()), ms(x.host_wait),
                      ms(x.kernel_wait), ms(x.other_wait), std::to_string(x.max_queue),
                      fmt::format("{:.1f}", x.mean_queue)});
  return t;
}

TextTable copy_table(const std::vector<CopyRow>& rows) {
  TextTable t;
  t.header = {"kind", "count", "MB", "ms", "GB/s"};
  for (const CopyRow& r : rows)
    t.rows.push_back({r.kind, std::to_string(r.count), fmt::format("{:.1f}", r.bytes / 1e6),
                      ms(r.time), fmt::format("{:.1f}", r.gigabytes_per_second())});
  return t;
}

TextTable sequence_table(const std::vector<SequenceRow>& rows, std::size_t top) {
  TextTable t;
  t.header = {"kernels", "count", "kernel ms", "gap ms", "mean us"};
  for (std::size_t k = 0; k < rows.size() && k < top; ++k) {
    const SequenceRow& r = rows[k];
    std::string names;
    for (std::size_t j = 0; j < r.kernels.size(); ++j)
      names += (j > 0 ? " > " : "") + shorten(function_name(r.kernels[j]), 40);
    t.rows.push_back({names, std::to_string(r.count), ms(r.kernel_time), ms(r.gap_time),
                      us(r.total() / static_cast<double>(r.count))});
  }
  return t;
}

TextTable operator_table(const std::vector<OperatorRow>& rows, std::size_t top, bool by_shape) {
  TextTable t;
  t.header = {"operator"};
  if (by_shape) t.header.push_back("input dims");
  for (const char* h : {"calls", "self ms", "total ms", "device ms"}) t.header.push_back(h);
  for (std::size_t k = 0; k < rows.size() && k < top; ++k) {
    const OperatorRow& r = rows[k];
    std::vector<std::string> row = {shorten(r.name, 50)};
    if (by_shape) row.push_back(shorten(r.shapes, 40));
    for (const std::string& cell :
         {std::to_string(r.calls), ms(r.host_self), ms(r.host_total), ms(r.device_total)})
      row.push_back(cell);
    t.rows.push_back(row);
  }
  return t;
}

TextTable kernel_table(const std::vector<KernelRow>& rows, std::size_t top) {
  TextTable t;
  t.header = {"kernel", "class", "count", "total ms", "mean us", "max us", "share"};
  for (std::size_t k = 0; k < rows.size() && k < top; ++k) {
    const KernelRow& r = rows[k];
    t.rows.push_back({shorten(r.name), kernel_class_name(r.kind), std::to_string(r.count),
                      ms(r.total), us(r.mean()), us(r.max), percent(r.share)});
  }
  return t;
}

TextTable launch_table(const LaunchStats& stats, std::size_t top) {
  TextTable t;
  t.header = {"kernel", "count", "short", "launch us", "kernel us", "delay us"};
  for (std::size_t k = 0; k < stats.rows.size() && k < top; ++k) {
    const LaunchRow& r = stats.rows[k];
    const double n = static_cast<double>(std::max<std::uint64_t>(1, r.count));
    t.rows.push_back({shorten(r.name, 60), std::to_string(r.count), std::to_string(r.short_kernels),
                      us(r.launch_total / n), us(r.gpu_total / n), us(r.delay_total / n)});
  }
  return t;
}

TextTable rank_table(const RankComparison& ranks) {
  TextTable t;
  t.header = {"rank",        "steps", "step ms", "kernel ms", "exposed comm ms", "comm overlapped",
              "device util", ""};
  for (std::size_t i = 0; i < ranks.ranks.size(); ++i) {
    const RankRow& r = ranks.ranks[i];
    t.rows.push_back({std::to_string(r.rank), std::to_string(r.steps), ms(r.step), ms(r.kernel),
                      ms(r.communication), r.overlap < 0 ? "-" : percent(r.overlap), percent(r.utilization),
                      i == ranks.slowest ? "slowest" : ""});
  }
  return t;
}

TextTable diff_step_table(const TraceDiff& d) {
  TextTable t;
  t.header = {"ms per step", "before", "after", "change"};
  const auto row = [&](const std::string& label, double a, double b) {
    t.rows.push_back(
        {label, ms(a), ms(b), a > 0 ? fmt::format("{:+.1f}%", 100.0 * (b - a) / a) : "-"});
  };
  row("step", d.step_before.duration(), d.step_after.duration());
  for (std::size_t c = 0; c < kTimeCategories; ++c)
    row(category_name(static_cast<TimeCategory>(c)), d.step_before.time[c], d.step_after.time[c]);
  return t;
}

TextTable diff_rows_table(const std::vector<DiffRow>& rows, std::size_t top) {
  TextTable t;
  t.header = {"name",          "kind",     "change",    "before ms/step",
              "after ms/step", "delta ms", "calls/step"};
  for (std::size_t k = 0; k < rows.size() && k < top; ++k) {
    const DiffRow& r = rows[k];
    if (r.change == Change::kSame) break;
    t.rows.push_back({shorten(r.name, 60), r.kind, change_name(r.change), ms(r.before), ms(r.after),
                      fmt::format("{:+.3f}", r.delta() * 1e-6),
                      fmt::format("{:.0f} -> {:.0f}", r.calls_before, r.calls_after)});
  }
  return t;
}

std::string format_trace_report(const TraceReport& r, const TraceReportOptions& options) {
  std::string out;
  if (r.diff) {
    const TraceDiff& d = *r.diff;
    out += "before " + describe_info(r.traces[0].info) + "\n       " +
           describe_devices(r.traces[0].info) + "\n";
    out += "after  " + describe_info(r.traces[1].info) + "\n       " +
           describe_devices(r.traces[1].info) + "\n";
    out += fmt::format("steps: {} before, {} after; times are per step\n\n", d.steps_before,
                       d.steps_after);
    out += diff_step_table(d).render(TextFormat::kTerminal);
    out += "\noperators (host self time): " + count_line(d.operators) + "\n" +
           diff_rows_table(d.operators, options.top).render(TextFormat::kTerminal);
    out += "\nkernels: " + count_line(d.kernels) + "\n" +
           diff_rows_table(d.kernels, options.top).render(TextFormat::kTerminal);
    return out;
  }
  if (r.ranks) {
    out += fmt::format("{} ranks\n", r.traces.size());
    for (const TraceAnalysis& a : r.traces) out += "  " + describe_info(a.info) + "\n";
    if (!r.ranks->warning.empty()) out += "warning: " + r.ranks->warning + "\n";
    out += "\n" + rank_table(*r.ranks).render(TextFormat::kTerminal);
    out += fmt::format("slowest: rank {}, {:.2f}x the fastest\n\n",
                       r.ranks->ranks[r.ranks->slowest].rank, r.ranks->spread);
    // The slowest rank in full: it sets the job's pace.
    out += "the slowest rank:\n" +
           format_one(r.traces[r.ranks->ranks[r.ranks->slowest].trace], options);
    return out;
  }
  for (const TraceAnalysis& a : r.traces) out += format_one(a, options);
  return out;
}

nlohmann::json to_json(const TraceReport& r, const TraceReportOptions& options) {
  nlohmann::json traces = nlohmann::json::array();
  for (const TraceAnalysis& a : r.traces) traces.push_back(trace_json(a, options));
  nlohmann::json j = {{"schema", "torchperf.trace/2"}, {"traces", traces}};
  nlohmann::json thresholds = {{"kernel_wait_gap_us", kKernelWaitGapNs * 1e-3},
                               {"diff_threshold", kDiffThreshold}};
  j["definitions"] = thresholds;
  if (r.ranks) {
    nlohmann::json rows = nlohmann::json::array();
    for (const RankRow& x : r.ranks->ranks)
      rows.push_back({{"rank", x.rank},
                      {"path", x.path},
                      {"steps", x.steps},
                      {"step_ms", x.step * 1e-6},
                      {"kernel_ms", x.kernel * 1e-6},
                      {"exposed_communication_ms", x.communication * 1e-6},
                      {"communication_overlap",
                       x.overlap < 0 ? nlohmann::json(nullptr) : nlohmann::json(x.overlap)},
                      {"device_utilization", x.utilization}});
    j["ranks"] = {{"rows", rows},
                  {"slowest_rank", r.ranks->ranks[r.ranks->slowest].rank},
                  {"spread", r.ranks->spread},
                  {"shared_steps", r.ranks->shared_steps},
                  {"warning", r.ranks->warning}};
  }
  if (r.diff) {
    const TraceDiff& d = *r.diff;
    nlohmann::json before = step_json(d.step_before, r.traces[0].overview.annotated_steps);
    nlohmann::json after = step_json(d.step_after, r.traces[1].overview.annotated_steps);
    before.erase("step");
    after.erase("step");
    j["diff"] = {{"before", d.before},
                 {"after", d.after},
                 {"steps_before", d.steps_before},
                 {"steps_after", d.steps_after},
                 {"step_before", before},
                 {"step_after", after},
                 {"operators", diff_rows_json(d.operators, options.top)},
                 {"operator_changes", change_counts(d.operators)},
                 {"kernels", diff_rows_json(d.kernels, options.top)},
                 {"kernel_changes", change_counts(d.kernels)}};
  }
  return j;
}

std::vector<Panel> trace_panels(const TraceReport& r, const TraceReportOptions& options) {
  std::vector<Panel> panels;
  const std::string stack_caption =
      "Each instant is counted once, in priority order (kernel, communication, memcpy, memset, "
      "runtime, data loader, CPU exec, other); hover for the share.";
  if (r.diff) {
    panels.push_back(
        stacked_steps_panel("steps", "Mean step, before and after", stack_caption,
                            {{"before", r.diff->step_before}, {"after", r.diff->step_after}}));
    std::vector<std::pair<std::string, double>> bars;
    std::vector<std::string> groups;
    for (const auto* rows : {&r.diff->kernels, &r.diff->operators})
      for (std::size_t k = 0; k < rows->size() && k < options.top; ++k) {
        if ((*rows)[k].change == Change::kSame) break;
        bars.push_back({(*rows)[k].name, (*rows)[k].delta() * 1e-6});
        groups.push_back(std::string(rows == &r.diff->kernels ? "kernel " : "operator ") +
                         change_name((*rows)[k].change));
      }
    if (!bars.empty())
      panels.push_back(bars_panel("changes", "Largest changes per step",
                                  "after minus before, ms per step (kernels: device time; "
                                  "operators: host self time)",
                                  "delta ms per step", bars, "change", groups));
    return panels;
  }
  if (r.ranks) {
    std::vector<std::pair<std::string, StepBreakdown>> bars;
    for (std::size_t i = 0; i < r.traces.size(); ++i)
      bars.push_back({rank_label(r.traces[i], i), r.traces[i].overview.average});
    panels.push_back(stacked_steps_panel("ranks", "Mean step per rank", stack_caption, bars));
    return panels;
  }
  const TraceAnalysis& a = r.traces.front();
  std::vector<std::pair<std::string, StepBreakdown>> bars;
  for (const StepBreakdown& s : a.overview.steps) bars.push_back({step_label(s), s});
  if (a.overview.steps.size() > 1) bars.push_back({"mean", a.overview.average});
  panels.push_back(
      stacked_steps_panel("steps", "Where each step's time goes", stack_caption, bars));
  if (a.overview.has_device) panels.push_back(idle_panel(a));
  std::vector<std::pair<std::string, double>> ops;
  for (std::size_t k = 0; k < a.operators.size() && k < options.top; ++k)
    ops.push_back({a.operators[k].name, a.operators[k].host_self * 1e-6});
  if (!ops.empty())
    panels.push_back(bars_panel("operators", "Top operators by host self time",
                                "Host time spent in the operator itself, ms over the trace.",
                                "self ms", ops));
  std::vector<std::pair<std::string, double>> kernels;
  std::vector<std::string> classes;
  for (std::size_t k = 0; k < a.kernels.size() && k < options.top; ++k) {
    kernels.push_back({a.kernels[k].name, a.kernels[k].total * 1e-6});
    classes.push_back(kernel_class_name(a.kernels[k].kind));
  }
  if (!kernels.empty())
    panels.push_back(bars_panel("kernels", "Top kernels by device time",
                                "Total device time per kernel name, ms over the trace; colour: "
                                "computation, communication or memory.",
                                "total ms", kernels, "class", classes));
  return panels;
}

std::string render_trace_html(const TraceReport& r, const TraceReportOptions& options) {
  HtmlPage page;
  std::string body;
  if (r.diff) {
    page.title = "torchperf trace --diff";
    page.header_lines = {"before: " + describe_info(r.traces[0].info),
                         "after: " + describe_info(r.traces[1].info)};
    body += "<section><h2>Step time, before and after</h2>" + html_table(diff_step_table(*r.diff));
    body += "<h3>Operators: " + html_escape(count_line(r.diff->operators)) + "</h3>" +
            html_table(diff_rows_table(r.diff->operators, options.top));
    body += "<h3>Kernels: " + html_escape(count_line(r.diff->kernels)) + "</h3>" +
            html_table(diff_rows_table(r.diff->kernels, options.top)) + "</section>";
  } else if (r.ranks) {
    page.title = fmt::format("torchperf trace: {} ranks", r.traces.size());
    for (const TraceAnalysis& a : r.traces) page.header_lines.push_back(describe_info(a.info));
    if (!r.ranks->warning.empty()) page.header_lines.push_back("warning: " + r.ranks->warning);
    body += "<section><h2>Ranks</h2>" + html_table(rank_table(*r.ranks)) + "</section>";
    for (std::size_t i = 0; i < r.traces.size(); ++i) {
      const TraceAnalysis& a = r.traces[i];
      body += "<section><h2>" + html_escape(rank_label(a, i)) + "</h2>" +
              html_table(step_table(a.overview, options.step_rows));
      if (!a.advice.empty()) body += "<h3>Advice</h3>" + html_table(advice_table(a.advice));
      body += "</section>";
    }
  } else {
    const TraceAnalysis& a = r.traces.front();
    page.title = "torchperf trace: " + a.info.path;
    page.header_lines = {describe_info(a.info), describe_devices(a.info),
                         describe_steps(a.overview)};
    body += "<section><h2>Step time breakdown (ms)</h2>" +
            html_table(step_table(a.overview, options.step_rows));
    if (a.overview.has_device)
      body += "<h3>Device work per step (ms; each device event in the step that launched it)</h3>" +
              html_table(step_device_table(a.overview, options.step_rows)) + "<p>" +
              html_escape(attribution_line(a.overview)) + "</p>" +
              "<h3>Device summary (Holistic Trace Analysis's definitions)</h3>" +
              html_table(device_summary_table(a.overview.device)) + "<p>" +
              html_escape(class_overlap_line(a.overview.device)) + "</p>" +
              html_table(stream_table(a.overview.device));
    body += "<h3>Advice</h3>" + (a.advice.empty() ? std::string("<p>No rule fires.</p>")
                                                  : html_table(advice_table(a.advice)));
    body += "</section>";
    std::string after = "<section><h2>Operators</h2>" +
                        html_table(operator_table(a.operators, options.top, options.by_shape)) +
                        "<h2>Kernels</h2>" + html_table(kernel_table(a.kernels, options.top)) +
                        "<h2>Copies and sets</h2>" + html_table(copy_table(a.copies)) +
                        "<h2>Launches</h2>" + html_table(launch_table(a.launches, options.top)) +
                        "<h2>Kernel sequences</h2>" +
                        html_table(sequence_table(a.sequences, options.top)) + "</section>";
    page.body_after_plots = after;
  }
  page.body_before_plots = body;
  page.panels = trace_panels(r, options);
  return render_page(page);
}

}  // namespace torchperf
