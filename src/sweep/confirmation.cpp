#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "supervisor.h"
#include "torchperf/config/apply.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/json_fields.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/sweep/tune_plan.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/python_worker.h"
#include "torchperf/worker/worker.h"

// The end of a tune run: the leaders re-measured head to head (each side in its own worker), the
// winner named only when its lead is significant, its speedups over baseline and careful, its
// compile artefacts kept, and the session's summary.

namespace torchperf {

using nlohmann::json;
namespace fs = std::filesystem;

HeadToHead Supervisor::compare(const std::string& a, const std::string& b, const std::string& why) {
  Configuration ca = Configuration::parse(a), cb = Configuration::parse(b);
  HeadToHead h;
  h.a = resolve(ca, desc_.traits).to_string();
  h.b = resolve(cb, desc_.traits).to_string();
  // Keyed by the resolved pair: "the runner-up" and "the baseline" may be the same configuration.
  const std::string id = h.a + " | " + h.b;
  if (auto it = compared_.find(id); it != compared_.end()) return it->second;
  // A side the sweep never measured (the baseline, in a tune that spent its budget elsewhere)
  // may need its package: compiled here, not inside the comparison's worker and time limit.
  for (const auto* c : {&ca, &cb}) {
    std::string ignored;
    artefacts_->side_ready(*c, std::numeric_limits<double>::infinity(), ignored);
  }
  // A pair whose rounds saw a busy machine in some windows and a quiet one in others mixes two
  // regimes: it is measured once more where the budget allows, and said either way.
  const HeadToHead named = h;
  for (int attempt = 0;; ++attempt) {
    std::optional<RoundLoad> load;
    h = run_pair(ca, cb, named, id, why, load);
    const LoadedPair next = after_varied_load(load, why, attempt, pair_fits());
    if (!next.note.empty()) result_.notes.push_back(next.note);
    if (!next.again) return h;
  }
}

LoadedPair after_varied_load(const std::optional<RoundLoad>& load, const std::string& why,
                             int attempt, bool another_fits) {
  if (!load || !load->varied()) return {};
  const std::string what = fmt::format(
      "the head-to-head {} saw other work come and go ({} of {} windows of its rounds had half a "
      "core or more taken, up to {:.1f})",
      why, load->busy_windows, load->windows, load->max_cores);
  if (attempt == 0 && another_fits) return {true, what + ": measured again"};
  return {false, what + (attempt == 0 ? ": the budget left no room to measure it again"
                                      : " again: its ratio mixes a busy and a quiet machine")};
}

HeadToHead Supervisor::run_pair(const Configuration& ca, const Configuration& cb, HeadToHead h,
                                const std::string& id, const std::string& why,
                                std::optional<RoundLoad>& load) {
  NodeJob pair = job(NodeJobKind::kCompare, "compare-" + fnv1a(id).substr(0, 10));
  pair.workload = o_.workload;
  // The pair shares one budget; a slow side (the baseline) needs room for enough rounds.
  pair.workload.time_s = 4 * o_.workload.time_s;
  // Both sides' padding was checked when they were measured in full: a pair only decides.
  pair.workload.check_padding = false;
  // It decides: once its interval excludes 1 the verdict stands, and more rounds only narrow the
  // figure, at the points' expense (bench 23's pairs ran 8-15 rounds at 1.22-9.7x).
  pair.workload.stop_when_decided = true;
  pair.workload.reference_files.clear();
  for (const auto* c : {&ca, &cb}) {
    const std::string batch = reference_batch(o_.workload, *c);
    if (references_.count(batch)) pair.workload.reference_files[batch] = references_.at(batch);
  }
  // Each side in its own worker: they may differ in threads, the allocator or the BLAS, and
  // neither may pay for the other's process state. On a cluster, both on one node. A Python
  // side takes a worker of its own process state from the points' pool (its graphs compiled
  // there once), and two Python sides of one process state share it; a C++ side starts one.
  pair.shared = true;
  pair.configuration = ca.to_string();
  pair.versus = cb.to_string();
  current_ = why;
  const JobEnd end = runner_->run(pair);
  if (interrupted_) throw Interrupted("interrupted while confirming the winner");
  const std::string where = end.node_label.empty() ? "" : " on " + end.node_label;
  try {
    if (end.outcome.ending != Ending::kAnswered)
      throw RuntimeFailure("the comparison" + where + ": " + end.outcome.message);
    if (!end.outcome.response.value("ok", false))
      rethrow_worker_error(end.outcome.response.at("error"), "the comparison" + where);
    const BenchResult r = from_reply<MeasureReply>(end.outcome.response, "compare").result;
    const Comparison& c = *r.comparison;
    RatioEstimate speedup = c.speedup;
    // bench's ratio is in samples/s; for latency, compare per-call time at each side's batch.
    if (!o_.objective.higher_is_better() && c.a.samples_per_call() != c.b.samples_per_call())
      speedup = scaled(speedup, c.b.samples_per_call() / c.a.samples_per_call());
    h.ratio = speedup.ratio;
    h.low = speedup.interval.low;
    h.high = speedup.interval.high;
    h.rounds = speedup.rounds;
    h.verdict = verdict_of(speedup);
    load = c.round_load;
  } catch (const std::exception& e) {
    h.failure = e.what();
  }
  json record = to_json(h);
  record["record"] = "head_to_head";
  record["id"] = id;
  record["why"] = why;
  record["session"] = session_;
  record["machine_class"] = runner_->machines().machine_class;
  if (!end.node_label.empty()) record["node"] = end.node_label;  // both sides ran there
  journal_->append(record);
  compared_[id] = h;
  return h;
}

namespace {

// A point's sweep interval on the objective, higher better.
std::pair<double, double> interval_of(const Objective& objective, const PointResult& p) {
  const PointMetrics& m = p.metrics;
  if (objective.kind == ObjectiveKind::kThroughput) return {m.throughput_low, m.throughput_high};
  if (objective.kind == ObjectiveKind::kLatencyP50)
    return {1 / m.latency_p50_high_ms, 1 / m.latency_p50_low_ms};
  return {NAN, NAN};
}

}  // namespace

// The best, the runner-up (its lead is always checked head to head), and the next ones whose
// sweep interval still reaches the best's: the top within their CIs.
std::vector<std::string> Supervisor::choose_leaders(const std::vector<const PointResult*>& ok) const {
  std::vector<std::string> leaders = {ok.front()->key};
  const double best_low = interval_of(o_.objective, *ok.front()).first;
  for (std::size_t i = 1; i < ok.size() && leaders.size() < o_.leaders; ++i) {
    const double high = interval_of(o_.objective, *ok[i]).second;
    const bool overlaps = !std::isfinite(high) || !std::isfinite(best_low) || high >= best_low;
    if (i == 1 || overlaps) leaders.push_back(ok[i]->key);
  }
  return leaders;
}

std::vector<const PointResult*> Supervisor::crownable(std::vector<const PointResult*> ok) {
  MachineLoad* load = runner_->machine_load();
  if (!load) return ok;
  load->sample();
  if (!load->busy()) return ok;
  const int free = load->free_cores(desc_.traits.usable_cores);
  std::vector<const PointResult*> kept;
  for (const auto* p : ok) {
    const auto it = index_of_.find(p->key);
    const std::string threads =
        it == index_of_.end()
            ? "n/a"
            : resolve(space_.points[it->second].config, desc_.traits).value("threads");
    const bool above = threads != "n/a" && !threads.empty() &&
                       std::all_of(threads.begin(), threads.end(), ::isdigit) &&
                       std::stoi(threads) > free;
    if (!above) kept.push_back(p);
  }
  // Only points above the free cores passed: the run cannot tell, and says so.
  if (kept.empty()) {
    result_.notes.push_back(fmt::format(
        "a busy machine: every point that passed uses more threads than the {} core(s) left free, "
        "so which is fastest on a quiet machine could not be told; tune again when it is quiet",
        free));
    return ok;
  }
  result_.machine_load.set_aside = ok.size() - kept.size();
  if (kept.size() < ok.size())
    result_.notes.push_back(fmt::format(
        "a busy machine: {} point(s) with more threads than the {} core(s) left free were not "
        "crowned (their figures measured the contention, not the setting): whether more threads "
        "win on a quiet machine could not be told here",
        ok.size() - kept.size(), free));
  return kept;
}

// Whether one more head-to-head pair fits in what is left of the budget.
bool Supervisor::pair_fits() const {
  return !budget_.limited() || budget_.wall_left_s() >= budget_.pair_estimate_s();
}

void Supervisor::confirm() {
  std::vector<const PointResult*> ok;
  for (const auto& p : result_.points)
    if (p.status == PointStatus::kOk) ok.push_back(&p);
  // Points measured in full rank before brief ones (a smart search's finalists are the best of
  // the brief ones, measured again): leaders are chosen on full measurements.
  std::sort(ok.begin(), ok.end(), [](auto* x, auto* y) {
    if (x->brief != y->brief) return !x->brief;
    return x->score > y->score;
  });
  if (ok.empty()) {
    // Nothing ran: the budget is why, and what a point would have cost says by how much.
    const std::string compiles = artefacts_->plan_text();
    // The smart search screens a point briefly and needs room to measure it in full before it
    // can crown it: the unit the budget refused is both (issue 63: "8 s were left, and a point
    // takes ~6 s" over a run of 0 points).
    const double full = budget_.point_estimate_s(false);
    const bool smart = o_.search == SearchKind::kSmart;
    const std::string unit =
        smart ? fmt::format("a point needs ~{:.0f} s: ~{:.0f} s screened, then ~{:.0f} s measured "
                            "in full before it can be crowned",
                            budget_.point_estimate_s(true) + full, budget_.point_estimate_s(true),
                            full)
              : fmt::format("a point takes ~{:.0f} s to measure", full);
    result_.winner_note =
        result_.points.empty() && search_->cut_by_budget()
            ? fmt::format("the budget of {} ran out before any point ran: after loading the model "
                          "and holding back {:.0f} s for the confirmation, {:.0f} s were left for "
                          "points, and {}{}; raise the budget",
                          budget_words(o_.budget_s), budget_.held_back_s(),
                          std::max(0.0, budget_.remaining_s()), unit,
                          compiles.empty() ? "" : " after what it compiles first (" + compiles + ")")
            : "no configuration finished and passed the accuracy guard";
    return;
  }
  ok = crownable(std::move(ok));
  const auto config_of = [&](const std::string& key) {
    return space_.points[index_of_.at(key)].config.to_string();
  };
  result_.leaders = choose_leaders(ok);
  // A budget spent on measuring confirms what it still can; the rest goes unconfirmed, said.
  std::size_t unconfirmed = 0;
  for (std::size_t i = 1; i < result_.leaders.size(); ++i) {
    if (!pair_fits()) {
      unconfirmed = result_.leaders.size() - i;
      result_.leaders.resize(i);
      break;
    }
    result_.confirmation.push_back(compare(config_of(result_.leaders.front()),
                                           config_of(result_.leaders[i]),
                                           "confirming leader " + std::to_string(i + 1)));
  }
  std::map<std::string, const PointResult*> point_of;
  for (const auto* p : ok) point_of[p->key] = p;
  const WinnerDecision d = decide_winner(
      result_.leaders, result_.confirmation,
      [&](const std::string& key) {
        return index_of_.count(key) ? space_.points[index_of_.at(key)].changes : 1 << 20;
      },
      [&](const std::string& key) {
        const auto it = point_of.find(key);
        return it == point_of.end() ? 0.0 : it->second->metrics.cosine;
      },
      [&](const std::string& key) {
        const auto it = point_of.find(key);
        return it == point_of.end() ? 0LL : static_cast<long long>(it->second->metrics.batch);
      });
  result_.tie = d.tie;
  result_.tied = d.tied;
  result_.winner_note =
      unconfirmed > 0 && result_.confirmation.empty()
          ? fmt::format("unconfirmed: the best point of the sweep, not re-measured head to head "
                        "(the budget ran out); about {:.0f} s more would confirm it against the "
                        "runner-up",
                        budget_.pair_estimate_s())
      : result_.leaders.size() == 1 && ok.size() > 1 && o_.leaders <= 1
          ? "--leaders 1: not confirmed head to head"
          : d.note;
  result_.winner = d.winner;
  compare_winner(d.winner);
}

// Where the baseline is another configuration than careful. Not under a budget where careful is
// the careful loop over a stream (each window sorted): the baseline's batches in arrival order
// pad ~2x the tokens, its pair costs what several points cost (38 s of bench 23's 5 minutes,
// twice the careful pair), and the careful loop is the bar a winner must clear.
bool Supervisor::baseline_reserved() const {
  const Configuration careful = careful_at(desc_.traits, "n/a", o_.as_given);
  if (careful.get("batching") && budget_.limited()) return false;
  return resolve(baseline_at("n/a"), desc_.traits).to_string() !=
         resolve(careful, desc_.traits).to_string();
}

// The winner against baseline, careful and (when given) the model as given, at its batch.
void Supervisor::compare_winner(const std::string& winner) {
  const std::string winner_config = space_.points[index_of_.at(winner)].config.to_string();
  // The batch the winner ran at, resolved: a program exported with a static batch runs at its
  // own, which its configuration does not name (the batch knob is the program's, not a choice).
  const std::string batch = o_.workload.inputs_file.empty() ||
                                    holds_input_samples(o_.workload.inputs_file)
                                ? resolve(space_.points[index_of_.at(winner)].config, desc_.traits)
                                      .value("batch")
                                : "n/a";
  const std::string b = batch == "n/a" ? "" : batch;
  const auto against = [&](const Configuration& other,
                           const std::string& name) -> std::optional<HeadToHead> {
    if (resolve(other, desc_.traits).to_string() == winner) return std::nullopt;
    if (!pair_fits()) {
      result_.notes.push_back(fmt::format(
          "the winner was not measured against the {}: the budget ran out (about {:.0f} s more "
          "would)",
          name, budget_.pair_estimate_s()));
      return std::nullopt;
    }
    if (std::string why; !artefacts_->side_ready(other, budget_.wall_left_s(), why)) {
      result_.notes.push_back("the winner was not measured against the " + name + ": " + why);
      return std::nullopt;
    }
    return compare(winner_config, other.to_string(), "winner vs " + name);
  };
  // The careful baseline first: what a careful person writes is the bar a winner must clear. The
  // baseline is measured apart only when it is another configuration (a program's is the same).
  const Configuration careful = careful_at(desc_.traits, b, o_.as_given);
  result_.careful = resolve(careful, desc_.traits).to_string();
  result_.vs_careful = against(careful, "careful");
  result_.baseline = resolve(baseline_at(b), desc_.traits).to_string();
  if (result_.baseline != result_.careful && baseline_reserved())
    result_.vs_baseline = against(baseline_at(b), "baseline");
  else if (result_.baseline != result_.careful)
    result_.notes.push_back(
        "the winner was not measured against the baseline (batches in arrival order) within the "
        "budget: on a stream the bar is the careful loop, each window sorted by length, and the "
        "baseline's pair costs what several points cost");
  if (!o_.as_given.empty()) {
    Configuration given = Configuration::parse(o_.as_given);
    if (!given.get("batch") && !b.empty()) given.set("batch", b);
    result_.as_given = resolve(given, desc_.traits).to_string();
    result_.vs_as_given = against(given, "as given");
  }
}

// One-knob changes from the baseline, as the sweep measured them (not paired).
void Supervisor::single_changes() {
  const PointResult* base = nullptr;
  for (const auto& p : result_.points)
    if (p.changes == 0 && p.status != PointStatus::kFailed) base = &p;
  if (!base) return;
  const ResolvedConfiguration rb =
      resolve(space_.points[index_of_.at(base->key)].config, desc_.traits);
  for (const auto& p : result_.points) {
    if (p.changes != 1 || p.status == PointStatus::kFailed) continue;
    const ResolvedConfiguration rp =
        resolve(space_.points[index_of_.at(p.key)].config, desc_.traits);
    for (const auto& k : rp.knobs) {
      if (!k.applicable || k.value == rb.value(k.name)) continue;
      SingleChange c{k.name, k.value, p.key, p.score / base->score, NAN, NAN};
      const PointMetrics &m = p.metrics, &mb = base->metrics;
      if (o_.objective.kind == ObjectiveKind::kThroughput) {
        c.low = m.throughput_low / mb.throughput_high;
        c.high = m.throughput_high / mb.throughput_low;
      } else if (o_.objective.kind == ObjectiveKind::kLatencyP50) {
        c.low = mb.latency_p50_low_ms / m.latency_p50_high_ms;
        c.high = mb.latency_p50_high_ms / m.latency_p50_low_ms;
      }
      result_.single_changes.push_back(c);
    }
  }
  std::sort(result_.single_changes.begin(), result_.single_changes.end(),
            [](const auto& x, const auto& y) { return x.ratio > y.ratio; });
}

// torch.compile's cache artifacts of the winner (its Python point wrote them beside its log) are
// kept as OUT/artifacts/compile_cache.bin, where apply loads them instead of compiling again; the
// other points' are removed (each can be megabytes).
void Supervisor::keep_winner_artifacts() {
  const std::string workers = o_.out_dir + "/workers";
  std::error_code ec;
  if (result_.winner) {
    const std::string saved = compile_artifacts_path(
        workers, fmt::format("point-{}", fnv1a(*result_.winner).substr(0, 10)));
    if (fs::exists(saved, ec)) {
      fs::create_directories(o_.out_dir + "/artifacts", ec);
      fs::copy_file(saved, o_.out_dir + "/artifacts/compile_cache.bin",
                    fs::copy_options::overwrite_existing, ec);
    }
  }
  for (const auto& entry : fs::directory_iterator(workers, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 18 && name.compare(name.size() - 18, 18, ".compile_cache.bin") == 0)
      fs::remove(entry.path(), ec);
  }
}

void Supervisor::summarize() {
  std::vector<double> overheads;
  for (const auto& p : result_.points)
    if (p.status != PointStatus::kFailed && !p.resumed) overheads.push_back(p.overhead_s);
  if (!overheads.empty()) result_.overhead_median_s = median_of(overheads);
  single_changes();
  result_.wall_s = budget_.elapsed_s();
  if (budget_.limited() && result_.wall_s > o_.budget_s)
    result_.notes.push_back(fmt::format(
        "the run took {:.1f} min, over the {} budget: points and comparisons are not cut "
        "short once started",
        result_.wall_s / 60, budget_words(o_.budget_s)));
  json summary = to_json(result_);
  summary["record"] = "summary";
  summary["session"] = session_;
  summary.erase("points");  // they are in the journal already
  journal_->append(summary);
}

WinnerDecision decide_winner(const std::vector<std::string>& leaders,
                             const std::vector<HeadToHead>& confirmation,
                             const std::function<int(const std::string&)>& changes,
                             const std::function<double(const std::string&)>& cosine,
                             const std::function<long long(const std::string&)>& batch) {
  WinnerDecision d;
  if (leaders.empty()) {
    d.note = "no configuration finished and passed the accuracy guard";
    return d;
  }
  d.winner = leaders.front();
  if (leaders.size() == 1) {
    d.note = "only one configuration passed: not confirmed head to head";
    return d;
  }
  std::vector<std::string> tied = {leaders.front()};
  const HeadToHead* reversal = nullptr;
  std::size_t answered = 0;
  for (const auto& h : confirmation) {
    if (!h.failure.empty()) continue;
    ++answered;
    if (h.verdict == Verdict::kSlower && (!reversal || h.ratio < reversal->ratio)) reversal = &h;
    if (h.verdict == Verdict::kIndistinguishable || h.verdict == Verdict::kUndetermined)
      tied.push_back(h.b);
  }
  if (answered == 0) {
    d.note = "the head-to-head re-measurements failed: the sweep's leader is named, unconfirmed";
  } else if (reversal) {
    d.winner = reversal->b;
    d.note = fmt::format(
        "head to head, it beat the sweep's leader {} ({:.3f}x): the sweep's order was noise",
        leaders.front(), 1 / reversal->ratio);
  } else if (tied.size() > 1) {
    d.tie = true;
    d.tied = tied;
    // Among the tied, the simplest (fewest changes from the origin), then the smaller batch (at
    // the same throughput it answers sooner and holds less memory), then the closest to the
    // reference output, then the sweep's order.
    d.winner = *std::min_element(tied.begin(), tied.end(), [&](const auto& x, const auto& y) {
      if (changes(x) != changes(y)) return changes(x) < changes(y);
      if (batch && batch(x) != batch(y)) return batch(x) < batch(y);
      return cosine(x) > cosine(y);
    });
    d.note = fmt::format(
        "{} leaders are indistinguishable head to head; the simplest is named (fewest changes, "
        "then the smaller batch, then closest to the fp32 output)",
        tied.size());
  } else {
    d.note = "its lead over the runners-up is significant head to head";
  }
  return d;
}

}  // namespace torchperf
