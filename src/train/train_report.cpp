#include "torchperf/train/train_report.h"

#include <cmath>

#include <fmt/format.h>

#include "torchperf/json_fields.h"
#include "torchperf/report/html_report.h"
#include "torchperf/page/text_table.h"

namespace torchperf {
namespace {

std::string ms(double ns) { return fmt::format("{:.1f}", ns * 1e-6); }
std::string gib(std::int64_t bytes) {
  return bytes < 0 ? "n/a" : fmt::format("{:.2f} GiB", bytes / 1073741824.0);
}
std::string ratio(double r) { return fmt::format("{:.2f}x", r); }
std::string interval(const Interval& i) {
  if (!std::isfinite(i.low) || !std::isfinite(i.high)) return "no interval";
  return fmt::format("{:.2f}-{:.2f}", i.low, i.high);
}

struct Bar {
  std::string label;
  Breakdown breakdown;
};

std::vector<Bar> bars(const TrainReport& r) {
  std::vector<Bar> out;
  if (r.ladder) {
    for (const auto& rung : r.ladder->rungs)
      out.push_back({rung.step == 0 ? "0: as given" : std::to_string(rung.step) + ": " + rung.change,
                     rung.breakdown});
  } else {
    out.push_back({r.configuration.empty() ? "as given" : r.configuration, r.breakdown});
  }
  return out;
}

}  // namespace

TextTable breakdown_table(const Breakdown& b) {
  TextTable t;
  t.header = {"phase", "ms/step", "share"};
  for (std::size_t i = 0; i < kPhaseCount; ++i) {
    // The all-reduce is DDP's: one process has none to show.
    if (phase_at(i) == Phase::kAllReduce && b.ranks.empty()) continue;
    t.rows.push_back({phase_name(phase_at(i)) + std::string(phase_at(i) == Phase::kAllReduce
                                                                ? " (exposed)"
                                                                : ""),
                      ms(b.mean_ns[i]), percent(b.share[i])});
  }
  t.rows.push_back({"step (wall)", ms(b.step_ns), "100.0%"});
  return t;
}

TextTable ranks_table(const Breakdown& b) {
  TextTable t;
  t.header = {"rank", "host", "data wait", "forward", "backward", "all-reduce", "optimizer",
              "step ms", "own work ms", "peak memory"};
  for (const auto& r : b.ranks)
    t.rows.push_back({std::to_string(r.rank), r.host, ms(r.mean_ns[0]),
                      ms(r.mean_ns[static_cast<std::size_t>(Phase::kForward)]),
                      ms(r.mean_ns[static_cast<std::size_t>(Phase::kBackward)]),
                      ms(r.mean_ns[static_cast<std::size_t>(Phase::kAllReduce)]),
                      ms(r.mean_ns[static_cast<std::size_t>(Phase::kOptimizer)]), ms(r.step_ns),
                      ms(r.busy_ns), gib(r.peak_memory_bytes)});
  return t;
}

// torch.compile's time, reported apart from the step's ("-" where nothing compiled).
std::string compile_seconds(double s) { return s >= 0 ? fmt::format("{:.1f} s", s) : "-"; }

TextTable ladder_table(const LadderResult& ladder) {
  TextTable t;
  t.header = {"step", "change", "samples/s", "step ms", "utilisation", "speedup (95% CI)",
              "cumulative", "compile", "peak memory"};
  for (const auto& r : ladder.rungs)
    t.rows.push_back(
        {std::to_string(r.step),
         r.step == 0 ? (r.change.empty() ? "naive loop" : "naive loop, " + r.change)
                     : r.change + (r.changes_training ? " *" : ""),
         fmt::format("{:.1f}", r.breakdown.samples_per_second), ms(r.breakdown.step_ns),
         percent(r.breakdown.utilisation),
         r.step == 0 ? "-" : ratio(r.speedup.ratio) + " (" + interval(r.speedup.interval) + ")",
         ratio(r.cumulative), compile_seconds(r.compile_s), gib(r.breakdown.peak_memory_bytes)});
  return t;
}

std::string format_train_report(const TrainReport& r) {
  std::string out;
  out += fmt::format("train {} on {} ({}), {} loss, {}\n", r.model, r.device, r.data, r.loss,
                     r.optimizer);
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  auto breakdown_block = [&](const std::string& title, const Breakdown& b) {
    out += "\n" + title + "\n" + breakdown_table(b).render(TextFormat::kTerminal);
    const Interval ci = b.step_summary.median_ci;
    const std::string ci_text = std::isfinite(ci.low) && std::isfinite(ci.high)
                                    ? "95% CI " + ms(ci.low) + "-" + ms(ci.high)
                                    : "too few steps for a CI of the median (6 needed)";
    out += fmt::format("  {:.1f} samples/s over {} steps (step median {} ms, {}); "
                       "utilisation {} (forward+backward+optimizer); peak memory {}",
                       b.samples_per_second, b.steps, ms(b.step_summary.median), ci_text,
                       percent(b.utilisation), gib(b.peak_memory_bytes));
    if (b.memory_fraction() >= 0) out += fmt::format(" ({} of {})", percent(b.memory_fraction()),
                                                     gib(b.memory_capacity_bytes));
    out += "\n";
    if (!b.ranks.empty()) {
      out += fmt::format("  {} ranks; the step is the slowest rank's; straggler gap {} ms "
                         "(the slowest rank's own work over the median rank's)\n",
                         b.ranks.size(), ms(b.straggler_gap_ns));
      out += ranks_table(b).render(TextFormat::kTerminal);
    }
    if (b.skipped_steps) out += fmt::format("  {} step(s) skipped by the gradient scaler\n", b.skipped_steps);
    if (b.skipped_examples)
      out += fmt::format("  {} corrupt example(s) skipped\n", b.skipped_examples);
  };
  if (!r.ladder) {
    breakdown_block("step-time breakdown (" + r.configuration + ")", r.breakdown);
    if (!r.advice.empty())
      out += "\nadvice (* changes what is learned: batch size or precision)\n" +
             advice_table(r.advice).render(TextFormat::kTerminal);
    else
      out += "\nadvice: no rule fires; the step is compute-bound with nothing obvious left\n";
  } else {
    const auto& l = *r.ladder;
    // The two kinds of figure disagree by the machine's drift between rungs: the verdict is the
    // head-to-head's, each side measured in alternation with the other.
    out += "\nladder (* changes what is learned; samples/s and step ms: each rung's breakdown, "
           "measured alone; speedup: head to head against the rung before, in alternation)\n" +
           ladder_table(l).render(TextFormat::kTerminal);
    out += "stopped: " + l.stop_reason + "\n";
    for (const auto& n : l.notes) out += "note: " + n + "\n";
    if (!l.attempts.empty()) {
      out += "\nchanges tried head to head (B over A, samples/s, 95% CI)\n";
      TextTable t;
      t.header = {"change", "rule", "speedup", "95% CI", "processes", "compile", "kept"};
      std::vector<std::string> failures;
      for (const auto& a : l.attempts) {
        const bool failed = !a.failure.empty();
        t.rows.push_back({a.change + (a.changes_training ? " *" : ""), a.rule,
                          failed ? "-" : ratio(a.speedup.ratio),
                          failed ? "-" : interval(a.speedup.interval),
                          a.separate_processes ? "two" : "one", compile_seconds(a.compile_s),
                          a.kept ? "yes" : failed ? "no (failed)" : "no"});
        if (failed) failures.push_back(a.change + ": " + a.failure);
      }
      out += t.render(TextFormat::kTerminal);
      for (const auto& f : failures) out += "  failed: " + f + "\n";
    }
    if (!l.held_back.empty()) {
      out += "\nadvised but not tried:\n";
      for (const auto& h : l.held_back) out += "  " + h + "\n";
    }
    const std::string given = l.rungs.front().configuration.to_string();
    const std::string& started = l.rungs.front().change;  // what the climb changed to start
    breakdown_block("first step: the loop as given" + (started.empty() ? "" : ", with " + started) +
                        " (" + (given.empty() ? "defaults" : given) + ")",
                    l.rungs.front().breakdown);
    if (l.rungs.size() > 1)
      breakdown_block("last step: " + l.rungs.back().configuration.to_string(),
                      l.rungs.back().breakdown);
  }
  return out;
}

namespace {

nlohmann::json ranks_json(const Breakdown& b) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : b.ranks) {
    nlohmann::json phases = nlohmann::json::object();
    for (std::size_t i = 0; i < kPhaseCount; ++i) phases[phase_key(phase_at(i))] = r.mean_ns[i] * 1e-6;
    out.push_back({{"rank", r.rank}, {"host", r.host}, {"phases_ms", phases},
                   {"step_ms", r.step_ns * 1e-6}, {"own_work_ms", r.busy_ns * 1e-6},
                   {"peak_memory_bytes", r.peak_memory_bytes}});
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const Breakdown& b) {
  nlohmann::json phases = nlohmann::json::object();
  for (std::size_t i = 0; i < kPhaseCount; ++i)
    phases[phase_key(phase_at(i))] = {{"ms", b.mean_ns[i] * 1e-6}, {"share", b.share[i]}};
  return {{"steps", b.steps},
          {"step_ms", b.step_ns * 1e-6},
          {"step_median_ms", b.step_summary.median * 1e-6},
          {"step_median_ci_ms", {nullable(b.step_summary.median_ci.low * 1e-6),
                                 nullable(b.step_summary.median_ci.high * 1e-6)}},
          {"phases", phases},
          {"samples_per_second", b.samples_per_second},
          {"utilisation", b.utilisation},
          {"peak_memory_bytes", b.peak_memory_bytes},
          {"memory_capacity_bytes", b.memory_capacity_bytes},
          {"skipped_steps", b.skipped_steps},
          {"skipped_examples", b.skipped_examples},
          {"ranks", ranks_json(b)},
          {"straggler_gap_ms", b.straggler_gap_ns * 1e-6},
          {"activation_bytes", b.activation_bytes},
          {"checkpointed_activation_bytes", b.checkpointed_activation_bytes},
          {"unused_parameters", b.unused_parameters}};
}

namespace {

nlohmann::json advice_json(const std::vector<Advice>& advice) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : advice)
    out.push_back({{"rule", a.rule}, {"message", a.message}, {"evidence", a.evidence},
                   {"knob", a.knob}, {"value", a.value}, {"changes_training", a.changes_training}});
  return out;
}

nlohmann::json speedup_json(const Speedup& s) {
  return {{"ratio", s.ratio},
          {"ci", {nullable(s.interval.low), nullable(s.interval.high)}},
          {"rounds", s.rounds}};
}

}  // namespace

nlohmann::json to_json(const TrainReport& r) {
  nlohmann::json j = {{"schema", "torchperf.train/1"}, {"model", r.model},     {"data", r.data},
                      {"device", r.device},            {"loss", r.loss},       {"optimizer", r.optimizer},
                      {"configuration", r.configuration}, {"notes", r.notes}};
  if (!r.ladder) {
    j["breakdown"] = to_json(r.breakdown);
    j["advice"] = advice_json(r.advice);
    return j;
  }
  nlohmann::json rungs = nlohmann::json::array();
  for (const auto& rung : r.ladder->rungs)
    rungs.push_back({{"step", rung.step},
                     {"change", rung.change},
                     {"rule", rung.rule},
                     {"changes_training", rung.changes_training},
                     {"configuration", rung.configuration.to_string()},
                     {"breakdown", to_json(rung.breakdown)},
                     {"speedup", speedup_json(rung.speedup)},
                     {"cumulative", rung.cumulative},
                     {"in_python", rung.in_python},
                     {"compile_s", rung.compile_s >= 0 ? nlohmann::json(rung.compile_s) : nullptr},
                     {"advice", advice_json(rung.advice)}});
  nlohmann::json attempts = nlohmann::json::array();
  for (const auto& a : r.ladder->attempts)
    attempts.push_back({{"change", a.change}, {"rule", a.rule}, {"speedup", speedup_json(a.speedup)},
                        {"separate_processes", a.separate_processes},
                        {"changes_training", a.changes_training},
                        {"compile_s", a.compile_s >= 0 ? nlohmann::json(a.compile_s) : nullptr},
                        {"kept", a.kept},
                        {"failure", a.failure.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.failure)}});
  j["ladder"] = {{"rungs", rungs},
                 {"attempts", attempts},
                 {"held_back", r.ladder->held_back},
                 {"stop_reason", r.ladder->stop_reason},
                 {"notes", r.ladder->notes}};
  return j;
}

Panel breakdown_panel(const TrainReport& r) {
  nlohmann::json values = nlohmann::json::array();
  const auto list = bars(r);
  for (std::size_t b = 0; b < list.size(); ++b)
    for (std::size_t i = 0; i < kPhaseCount; ++i)
      values.push_back({{"configuration", list[b].label},
                        {"order", b},
                        {"phase", phase_name(phase_at(i))},
                        {"phase_order", i},
                        {"ms", list[b].breakdown.mean_ns[i] * 1e-6},
                        {"share", list[b].breakdown.share[i]},
                        {"samples_per_s", list[b].breakdown.samples_per_second}});
  Panel p;
  p.id = "breakdown";
  p.title = "Where a training step's time goes";
  p.caption = "Mean step time per configuration, stacked by phase (ms); hover for the share. "
              "Compute (forward, backward, optimizer) is the useful part.";
  std::vector<std::string> phases;
  for (std::size_t i = 0; i < kPhaseCount; ++i) phases.push_back(phase_name(phase_at(i)));
  p.spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
      {"title", p.title},
      {"width", 560},
      {"data", {{"values", values}}},
      {"mark", {{"type", "bar"}, {"tooltip", true}}},
      {"encoding",
       {{"y", {{"field", "configuration"}, {"type", "nominal"}, {"title", nullptr},
               {"sort", {{"field", "order"}}}}},
        {"x", {{"field", "ms"}, {"type", "quantitative"}, {"stack", "zero"},
               {"title", "ms per step"}}},
        {"color", {{"field", "phase"}, {"type", "nominal"},
                   {"scale", {{"domain", phases},
                              {"range", {"#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd",
                                         "#7f7f7f", "#8c564b"}}}}}},
        {"order", {{"field", "phase_order"}}},
        {"tooltip", {{{"field", "configuration"}}, {{"field", "phase"}},
                     {{"field", "ms"}, {"format", ".1f"}},
                     {{"field", "share"}, {"format", ".1%"}},
                     {{"field", "samples_per_s"}, {"format", ".1f"}, {"title", "samples/s"}}}}}}};
  // Zero-length bars are still items in Vega's scenegraph: every phase of every bar.
  p.expected_marks = {{"rect", static_cast<int>(values.size())}};
  return p;
}

std::string render_train_html(const TrainReport& r) {
  HtmlPage page;
  page.title = "torchperf train: " + r.model;
  page.header_lines = {r.data, "device " + r.device + ", " + r.loss + " loss, " + r.optimizer};
  std::string body = "<section><h2>" + std::string(r.ladder ? "Ladder" : "Breakdown") + "</h2>";
  if (r.ladder) {
    body += html_table(ladder_table(*r.ladder));
    body += "<p class=caption>stopped: " + html_escape(r.ladder->stop_reason) +
            "; * changes what is learned</p>";
  } else {
    body += html_table(breakdown_table(r.breakdown));
    body += "<h3>Advice</h3>" + html_table(advice_table(r.advice));
  }
  body += "</section>";
  page.body_before_plots = body;
  page.panels = {breakdown_panel(r)};
  return render_page(page);
}

}  // namespace torchperf
