#include "torchperf/report/tune_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "torchperf/analysis/run_analysis.h"
#include "torchperf/config/configuration.h"
#include "torchperf/measure/ratio_estimate.h"
#include "torchperf/report/table_writer.h"

namespace torchperf {
namespace {

std::string ratio_text(double ratio, double low, double high) {
  if (!std::isfinite(ratio)) return "n/a";
  if (!std::isfinite(low) || !std::isfinite(high)) return fmt::format("{:.3f}x (CI n/a)", ratio);
  return fmt::format("{:.3f}x ({:.3f}-{:.3f})", ratio, low, high);
}

std::string head_to_head_text(const HeadToHead& h) {
  if (!h.failure.empty()) return "comparison failed: " + h.failure;
  return fmt::format("{}, 95% CI over {} interleaved rounds: {}", ratio_text(h.ratio, h.low, h.high),
                     h.rounds, to_string(h.verdict));
}

std::string value_text(const TuneResult& r, const PointResult& p) {
  const double v = objective_value(r.objective, p.metrics);
  const auto with_ci = [&](double low, double high, int digits) {
    if (!std::isfinite(low) || !std::isfinite(high))
      return fmt::format("{:9.{}f} (CI n/a: too few samples)", v, digits);
    return fmt::format("{:9.{}f} ({:.{}f}-{:.{}f})", v, digits, low, digits, high, digits);
  };
  if (r.objective.kind == ObjectiveKind::kThroughput)
    return with_ci(p.metrics.throughput_low, p.metrics.throughput_high, 2);
  if (r.objective.kind == ObjectiveKind::kLatencyP50)
    return with_ci(p.metrics.latency_p50_low_ms, p.metrics.latency_p50_high_ms, 3);
  return fmt::format("{:9.3f}", v);
}

std::string quality_text(const PointMetrics& m) {
  std::string q = fmt::format("cos {:.6f}", m.cosine);
  if (m.top1) q += fmt::format(" top1 {:.1f}%", *m.top1 * 100);
  return q;
}

// The careful configuration as the summary names it: the user's code, or what a careful person
// writes (on a stream, each window sorted by length).
std::string careful_name_of(const TuneResult& r) {
  if (!r.as_given.empty()) return "careful (your model, eval + inference_mode)";
  return r.careful.find("batching=sorted") != std::string::npos
             ? "careful (eval, no autograd, each window sorted by length)"
             : "careful (eval, no autograd)";
}

// What was swept and how: the model, the space, what ran, the search and the time.
void add_run_summary(const TuneResult& r, std::string& out) {
  out += fmt::format("tune {}  inputs {}  objective {} ({})  guard {}\n", r.workload.model,
                     r.workload.inputs, r.objective.to_string(), r.objective.unit(),
                     r.guard.to_string());
  std::string axes;
  for (const auto& a : r.axes) axes += (axes.empty() ? "" : " x ") + a;
  out += fmt::format("space  {} points from {} combinations: {}\n", r.space_points,
                     r.space_combinations, axes);
  for (const auto& d : r.space_dropped) out += "       " + d + "\n";
  for (const auto& n : r.notes) out += "note   " + n + "\n";
  // Compile time apart from run time: what each AOTInductor package cost, paid once.
  for (const auto& p : r.packages)
    out += p.failure.empty()
               ? fmt::format("compile AOTInductor {}: {:.1f} s{}\n", p.options, p.compile_s,
                             p.cache_hit ? " (from the cache: 0 s this session)" : "")
               : fmt::format("compile AOTInductor {}: {}\n", p.options, p.failure);

  std::size_t ok = 0, guarded = 0, failed = 0;
  for (const auto& p : r.points)
    (p.status == PointStatus::kOk ? ok : p.status == PointStatus::kGuarded ? guarded : failed) += 1;
  out += fmt::format(
      "ran    {} points ({} from the journal, {} this session): {} passed, {} guarded out, {} "
      "failed; {} not run{}\n",
      r.points.size(), r.resumed_points, r.points.size() - r.resumed_points, ok, guarded, failed,
      r.not_run, r.budget_exhausted ? " (budget)" : "");
  if (r.search == SearchKind::kSmart)
    out += fmt::format(
        "search smart: {} (this session {} brief at {:.2g} s in {} shared workers, {} in full), {} "
        "head to head\n",
        r.search_spent, r.brief_points, r.brief_time_s, r.brief_workers, r.full_points,
        r.confirmation.size() + (r.vs_baseline ? 1 : 0) + (r.vs_careful ? 1 : 0) +
            (r.vs_as_given ? 1 : 0));
  if (r.truncated_lines)
    out += fmt::format("       the journal's last line was cut short: ignored (a point there runs again)\n");
  out += fmt::format(
      "time   {:.1f} min this session; per-point overhead (worker start, model load, setup, "
      "accuracy check) median {:.2f} s\n\n",
      r.wall_s / 60, r.overhead_median_s);
}

// The winner with its figures and head-to-heads, or why there is none.
void add_winner(const TuneResult& r, std::string& out) {
  const auto find = [&](const std::string& key) -> const PointResult* {
    for (const auto& p : r.points)
      if (p.key == key) return &p;
    return nullptr;
  };
  if (r.winner) {
    const PointResult* w = find(*r.winner);
    out += fmt::format("WINNER {}\n", *r.winner);
    if (w)
      out += fmt::format("       {} {}  {}  peak {}\n", value_text(r, *w), r.objective.unit(),
                         quality_text(w->metrics), format_bytes(w->metrics.peak_memory_bytes));
    if (w && std::isfinite(w->metrics.tokens_per_s))
      out += fmt::format("       {:.0f} useful tokens/s over the stream of lengths; {:.1f}% of "
                         "the tokens it ran were padding\n",
                         w->metrics.tokens_per_s, 100 * w->metrics.padding_share);
    out += "       " + r.winner_note + "\n";
    if (r.tie) {
      out += "       tied:";
      for (const auto& t : r.tied) out += "\n         " + t;
      out += "\n";
    }
    // Comparisons are made from the sweep's leader; when a runner-up won, say whose they are.
    for (const auto& h : r.confirmation)
      out += h.a == *r.winner
                 ? fmt::format("       vs {}: {}\n", h.b, head_to_head_text(h))
                 : fmt::format("       the sweep's leader vs {}: {}\n", h.b, head_to_head_text(h));
    // The configuration's batch: a stream's measurement counts the samples of a whole pass.
    const std::string batch = Configuration::parse(*r.winner)
                                  .get("batch")
                                  .value_or(w ? std::to_string(w->metrics.batch) : "?");
    // The careful baseline leads: it is the code a careful person writes, the bar to clear.
    const std::string careful_name = careful_name_of(r);
    if (r.vs_careful)
      out += fmt::format("  speedup over {} (batch {}): {}\n", careful_name, batch,
                         head_to_head_text(*r.vs_careful));
    else if (r.careful.empty() || *r.winner == r.careful)
      out += "  the winner is the " + careful_name + " configuration itself\n";
    else
      out += "  not measured against " + careful_name + " (see the notes)\n";
    if (r.vs_as_given)
      out += fmt::format("  speedup over the model as given (batch {}): {}\n", batch,
                         head_to_head_text(*r.vs_as_given));
    else if (!r.as_given.empty() && *r.winner == r.as_given)
      out += "  the winner is the model as given (" + r.as_given + ")\n";
    else if (!r.as_given.empty())
      out += "  not measured against the model as given (see the notes)\n";
    if (r.vs_baseline)
      out += fmt::format("  speedup over the baseline (batch {}): {}\n", batch,
                         head_to_head_text(*r.vs_baseline));
    else if (r.baseline == r.careful && *r.winner != r.careful)
      out += "  the baseline is the careful configuration (a torch.export program has no "
             "autograd to turn off)\n";
    else if (r.baseline != r.careful && *r.winner == r.baseline)
      out += "  the winner is the baseline itself\n";
  } else {
    out += "NO WINNER: " + r.winner_note + "\n";
  }
}

// With both runtimes swept, the best of each: the choice between staying in Python with
// torch.compile and running the model from C++ is the user's to make, with both numbers.
void add_best_of_each_runtime(const TuneResult& r, std::string& out) {
  const auto best_of = best_of_each_runtime(r.points);
  if (!best_of.empty()) {
    out += "  best of each runtime:\n";
    std::size_t width = 0;
    for (const auto& [runtime, i] : best_of) width = std::max(width, runtime.size());
    for (const auto& [runtime, i] : best_of)
      out += fmt::format("    {:{}}  {} {}  compile {:.1f} s  {}\n", runtime, width,
                         value_text(r, r.points[i]), r.objective.unit(),
                         compile_seconds(r.points[i]), r.points[i].key);
  }
}

// The sweep's ten best points.
void add_ranked(const TuneResult& r, std::string& out) {
  std::vector<const PointResult*> ranked;
  for (const auto& p : r.points)
    if (p.status == PointStatus::kOk) ranked.push_back(&p);
  std::sort(ranked.begin(), ranked.end(), [](auto* a, auto* b) { return a->score > b->score; });
  if (!ranked.empty()) {
    out += fmt::format("\ntop {} ({} with its 95% CI, from the sweep)\n",
                       std::min<std::size_t>(10, ranked.size()), r.objective.unit());
    for (std::size_t i = 0; i < ranked.size() && i < 10; ++i)
      out += fmt::format("  {:2}. {}  {}  {}{}\n", i + 1, value_text(r, *ranked[i]),
                         quality_text(ranked[i]->metrics), ranked[i]->key,
                         ranked[i]->brief ? "  (brief)" : "");
  }
}

// What each knob did alone, from the sweep's origin, by verdict.
void add_single_changes(const TuneResult& r, std::string& out) {
  std::string helped, hurt, nothing, unsure;
  for (const auto& c : r.single_changes) {
    const std::string line =
        fmt::format("  {}={}: {}\n", c.knob, c.value, ratio_text(c.ratio, c.low, c.high));
    switch (verdict_of(Interval{c.low, c.high})) {
      case Verdict::kUndetermined: unsure += line; break;
      case Verdict::kFaster: helped += line; break;
      case Verdict::kSlower: hurt += line; break;
      case Verdict::kIndistinguishable: nothing += line; break;
    }
  }
  if (!r.single_changes.empty())
    out += "\none-knob changes from " + r.origin +
           "\n(ratio on the objective; in brackets a bound from the two points' CIs, not a "
           "confidence interval: the points were not paired)\n";
  if (!helped.empty()) out += " helped\n" + helped;
  if (!hurt.empty()) out += " hurt\n" + hurt;
  if (!nothing.empty()) out += " no clear effect\n" + nothing;
  if (!unsure.empty()) out += " too few samples for an interval (raise --time)\n" + unsure;
}

// Points guarded out and failed, each list cut at ten (the journal has every one).
void add_guarded_and_failed(const TuneResult& r, std::string& out) {
  constexpr std::size_t kListed = 10;
  std::string guarded_list, failed_list;
  std::size_t guarded_n = 0, failed_n = 0;
  for (const auto& p : r.points) {
    if (p.status == PointStatus::kGuarded && guarded_n++ < kListed)
      guarded_list += fmt::format("  {}\n    {}\n", p.key, p.reason);
    if (p.status == PointStatus::kFailed && failed_n++ < kListed)
      failed_list += fmt::format("  {}\n    {}: {}\n", p.key, p.failure.name(), p.reason);
  }
  if (guarded_n > kListed)
    guarded_list += fmt::format("  … and {} more (in the journal)\n", guarded_n - kListed);
  if (failed_n > kListed)
    failed_list += fmt::format("  … and {} more (in the journal)\n", failed_n - kListed);
  if (!guarded_list.empty()) out += fmt::format("\nguarded out: {} (faster or not, their output is off)\n", guarded_n) + guarded_list;
  if (!failed_list.empty()) out += fmt::format("\nfailed: {}\n", failed_n) + failed_list;
}

}  // namespace

std::string format_tune(const TuneResult& r) {
  std::string out;
  add_run_summary(r, out);
  add_winner(r, out);
  add_best_of_each_runtime(r, out);
  add_ranked(r, out);
  add_single_changes(r, out);
  add_guarded_and_failed(r, out);
  out += "\nresults: " + r.journal_path + "\n";
  return out;
}

}  // namespace torchperf
