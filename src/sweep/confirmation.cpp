#include <algorithm>
#include <cmath>

#include "supervisor.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/json_fields.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/worker.h"

// The end of a tune run: the leaders re-measured head to head (each side in its own worker), the
// winner named only when its lead is significant, and its speedups over baseline and careful.

namespace torchperf {

using nlohmann::json;
namespace fs = std::filesystem;

// Both sides on one node of the cluster, alternated there as they are here.
BenchResult Supervisor::compare_on_node(const BenchOptions& w, const Configuration& a,
                                        const Configuration& b, const WorkerRun& run) {
  NodeJob job = node_job(NodeJobKind::kCompare, run.log_prefix);
  job.workload = w;
  job.configuration = a.to_string();
  job.versus = b.to_string();
  const WorkerOutcome out = run_job(job, run.tick);
  if (interrupted_) throw Interrupted("interrupted");
  if (out.exit != WorkerExit::kAnswered)
    throw RuntimeFailure("the comparison on " + last_node_ + ": " + out.message);
  if (!out.response.value("ok", false))
    rethrow_worker_error(out.response.at("error"), "the comparison on " + last_node_);
  return from_reply<MeasureReply>(out.response, "compare").result;
}

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
  ensure_packages_of(ca);
  ensure_packages_of(cb);
  std::map<std::string, std::string> refs;
  for (const auto* c : {&ca, &cb}) {
    const std::string batch = reference_batch(o_.workload, *c);
    if (references_.count(batch)) refs[batch] = references_.at(batch);
  }
  BenchOptions w = o_.workload;
  // The pair shares one budget; a slow side (the baseline) needs room for enough rounds.
  w.time_s = 4 * o_.workload.time_s;
  w.config = ca;
  w.vs = cb;
  w.reference_files = refs;
  current_ = why;
  fs::create_directories(o_.out_dir + "/workers");
  WorkerRun run;
  run.executable = o_.worker_executable;
  run.log_dir = o_.out_dir + "/workers";
  run.log_prefix = "compare-" + fnv1a(id).substr(0, 10);
  run.limits = limits_;
  run.tick = [&](double t) {
    report(phase_, t);
    if (interrupt_ && interrupt_()) {
      interrupted_ = true;
      return false;
    }
    return true;
  };
  try {
    // Each side in its own worker: they may differ in threads, the allocator or the BLAS, and
    // neither may pay for the other's process state.
    const BenchResult r = pool_ ? compare_on_node(w, ca, cb, run) : compare_in_workers(w, run, time_);
    const Comparison& c = *r.comparison;
    RatioEstimate speedup = c.speedup;
    // bench's ratio is in samples/s; for latency, compare per-call time at each side's batch.
    if (!o_.objective.higher_is_better() && c.a.batch != c.b.batch)
      speedup = scaled(speedup, static_cast<double>(c.b.batch) / static_cast<double>(c.a.batch));
    h.ratio = speedup.ratio;
    h.low = speedup.interval.low;
    h.high = speedup.interval.high;
    h.rounds = speedup.rounds;
    h.verdict = verdict_of(speedup);
  } catch (const Interrupted&) {
    throw Interrupted("interrupted while confirming the winner");
  } catch (const std::exception& e) {
    if (interrupted_) throw Interrupted("interrupted while confirming the winner");
    h.failure = e.what();
  }
  json record = to_json(h);
  record["record"] = "head_to_head";
  record["id"] = id;
  record["why"] = why;
  record["session"] = session_;
  record["machine_class"] = machine_class_;
  if (pool_) record["node"] = last_node_;  // both sides ran there
  journal_->append(record);
  compared_[id] = h;
  return h;
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
    result_.winner_note = "no configuration finished and passed the accuracy guard";
    return;
  }
  const auto config_of = [&](const std::string& key) {
    return by_key_.at(key)->config.to_string();
  };
  // The leaders: the best, the runner-up (its lead is always checked head to head), and the
  // next ones whose sweep interval still reaches the best's: the top within their CIs.
  const auto interval = [&](const PointResult& p) -> std::pair<double, double> {
    const PointMetrics& m = p.metrics;
    if (o_.objective.kind == ObjectiveKind::kThroughput)
      return {m.throughput_low, m.throughput_high};
    if (o_.objective.kind == ObjectiveKind::kLatencyP50)
      return {1 / m.latency_p50_high_ms, 1 / m.latency_p50_low_ms};
    return {NAN, NAN};
  };
  const double best_low = interval(*ok.front()).first;
  result_.leaders.push_back(ok.front()->key);
  for (std::size_t i = 1; i < ok.size() && result_.leaders.size() < o_.leaders; ++i) {
    const double high = interval(*ok[i]).second;
    const bool overlaps = !std::isfinite(high) || !std::isfinite(best_low) || high >= best_low;
    if (i == 1 || overlaps) result_.leaders.push_back(ok[i]->key);
  }
  if (result_.leaders.size() > 1)
    for (std::size_t i = 1; i < result_.leaders.size(); ++i)
      result_.confirmation.push_back(compare(config_of(result_.leaders.front()),
                                             config_of(result_.leaders[i]),
                                             "confirming leader " + std::to_string(i + 1)));
  std::map<std::string, const PointResult*> point_of;
  for (const auto* p : ok) point_of[p->key] = p;
  const WinnerDecision d = decide_winner(
      result_.leaders, result_.confirmation,
      [&](const std::string& key) {
        return by_key_.count(key) ? by_key_.at(key)->changes : 1 << 20;
      },
      [&](const std::string& key) {
        const auto it = point_of.find(key);
        return it == point_of.end() ? 0.0 : it->second->metrics.cosine;
      },
      [&](const std::string& key) {
        const auto it = point_of.find(key);
        return it == point_of.end() ? 0LL : static_cast<long long>(it->second->metrics.batch);
      });
  std::string winner = d.winner;
  result_.tie = d.tie;
  result_.tied = d.tied;
  result_.winner_note = result_.leaders.size() == 1 && ok.size() > 1
                            ? "--leaders 1: not confirmed head to head"
                            : d.note;
  result_.winner = winner;
  const std::string batch = reference_batch(o_.workload, by_key_.at(winner)->config);
  const std::string b = batch == "n/a" ? "" : batch;
  const auto against = [&](const Configuration& other,
                           const std::string& name) -> std::optional<HeadToHead> {
    if (resolve(other, desc_.traits).to_string() == winner) return std::nullopt;
    if (std::string why; !side_ready(other, why)) {
      result_.notes.push_back("the winner was not measured against the " + name + ": " + why);
      return std::nullopt;
    }
    return compare(config_of(winner), other.to_string(), "winner vs " + name);
  };
  result_.vs_baseline = against(baseline_at(b), "baseline");
  result_.vs_careful = against(careful_at(desc_.traits, b), "careful");
  if (!o_.as_given.empty()) {
    Configuration given = Configuration::parse(o_.as_given);
    if (!given.get("batch") && !b.empty()) given.set("batch", b);
    result_.as_given = resolve(given, desc_.traits).to_string();
    result_.vs_as_given = against(given, "as given");
  }
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
