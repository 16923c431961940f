#include "torchperf/serve/serve_tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "torchperf/error.h"
#include "torchperf/measure/quantile_bounds.h"
#include "torchperf/serve/batching_policy.h"
#include "torchperf/serve/bucket_plan.h"

namespace torchperf {
namespace {

BatchingPolicy policy_of(const ServingCandidate& c) {
  BatchingPolicy p;
  p.max_batch = c.max_batch;
  p.max_queue_delay_s = c.max_queue_delay_s;
  p.max_queue = std::max<std::size_t>(256, 4 * c.max_batch);
  return p;
}

// One request per forward on one instance with the most threads tried: what batching must beat.
bool is_unbatched(const ServingCandidate& c, const std::vector<ServingCandidate>& all) {
  std::size_t most = 0;
  for (const auto& x : all)
    if (x.instances == 1) most = std::max(most, x.threads);
  return c.max_batch == 1 && c.instances == 1 && c.threads == most;
}

}  // namespace

std::string ServingCandidate::label() const {
  return fmt::format("instances={} threads={} max_batch={} delay={:g}ms{}{}", instances, threads,
                     max_batch, max_queue_delay_s * 1e3,
                     edges.empty() ? "" : " buckets=" + describe_edges(edges),
                     max_tokens > 0 ? fmt::format(" tokens={}", max_tokens) : "");
}

std::vector<std::vector<std::int64_t>> bucket_sets_for(const LengthDistribution& lengths) {
  std::vector<std::vector<std::int64_t>> sets = {{lengths.max},
                                                 bucket_edges_option("plan:2", &lengths),
                                                 bucket_edges_option("plan:4", &lengths),
                                                 parse_bucket_edges("per-length", lengths.max)};
  std::vector<std::vector<std::int64_t>> out;
  for (auto& s : sets)
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  return out;
}

double CandidateResult::best_rate() const {
  return best_trial ? trials[*best_trial].rate_per_s : 0.0;
}

double amortised_rate(double rate, double start_s, double requests) {
  if (!(rate > 0)) return 0;
  if (!(requests > 0)) return rate;
  return requests / (std::max(0.0, start_s) + requests / rate);
}

std::optional<double> break_even_requests(double fast_rate, double fast_start_s, double quick_rate,
                                          double quick_start_s) {
  if (!(fast_rate > quick_rate) || !(quick_rate > 0) || !(fast_start_s > quick_start_s))
    return std::nullopt;
  return (fast_start_s - quick_start_s) / (1 / quick_rate - 1 / fast_rate);
}

void validate(const ServeTuneOptions& o) {
  if (o.max_batches.empty()) throw UsageError("--max-batches: expected at least one batch size");
  if (o.delays_s.empty()) throw UsageError("--delays: expected at least one delay");
  for (const auto b : o.max_batches)
    if (b == 0) throw UsageError("--max-batches: every size must be at least 1");
  for (const auto d : o.delays_s)
    if (!(d >= 0) || !std::isfinite(d)) throw UsageError("--delays: expected times >= 0");
  if (o.cores == 0) throw UsageError("--cores: expected at least 1");
  if (!(o.budget_s > 0)) throw UsageError("--budget: expected a positive time");
  if (!(o.min_run_s > 0)) throw UsageError("--min-run: expected a positive time");
  if (o.trials_per_candidate == 0) throw UsageError("--trials: expected at least 1");
  if (o.bucket_sets.empty()) throw UsageError("--buckets: expected at least one set of edges");
  if (o.token_budgets.empty()) throw UsageError("--token-budgets: expected at least one budget");
  if (!(o.expected_requests >= 0) || !std::isfinite(o.expected_requests))
    throw UsageError("--requests: expected a count of requests >= 0");
  if (!(o.max_start_s >= 0) || !std::isfinite(o.max_start_s))
    throw UsageError("--max-start: expected a time >= 0 (0: no cap)");
  for (const auto t : o.token_budgets)
    if (t < 0) throw UsageError("--token-budgets: expected 0 (no budget) or more");
}

std::vector<ServingCandidate> serving_candidates(const ServeTuneOptions& o) {
  std::vector<ServingCandidate> out;
  std::vector<std::size_t> batches = o.max_batches;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  const auto allowed = [](const std::vector<std::size_t>& chosen, std::size_t v) {
    return chosen.empty() || std::find(chosen.begin(), chosen.end(), v) != chosen.end();
  };
  for (std::size_t instances = 1; instances <= o.cores; ++instances)
    for (std::size_t threads = 1; instances * threads <= o.cores; ++threads) {
      if (!allowed(o.instances, instances) || !allowed(o.threads, threads)) continue;
      for (const auto b : batches)
        for (const auto d : o.delays_s) {
          // With one request per call, a delay only adds latency: the smallest one is enough.
          if (b == 1 && d != *std::min_element(o.delays_s.begin(), o.delays_s.end())) continue;
          // Nor do buckets or a token budget: the first of each.
          for (std::size_t e = 0; e < (b == 1 ? 1 : o.bucket_sets.size()); ++e)
            for (std::size_t t = 0; t < (b == 1 ? 1 : o.token_budgets.size()); ++t) {
              ServingCandidate c;
              c.instances = instances;
              c.threads = threads;
              c.max_batch = b;
              c.max_queue_delay_s = d;
              c.edges = o.bucket_sets[e];
              c.max_tokens = o.token_budgets[t];
              out.push_back(std::move(c));
            }
        }
    }
  if (out.empty())
    throw UsageError(fmt::format("--instances/--threads: no combination fits {} cores", o.cores));
  return out;
}

namespace {

// Each candidate with its predicted highest rate: the unbatched server first (the reference
// batching must beat), then the best predicted.
std::vector<CandidateResult> ranked_candidates(const ServeTuneOptions& o,
                                               const std::vector<ServingCandidate>& candidates,
                                               const std::map<std::size_t, ServiceCurve>& curves) {
  std::vector<CandidateResult> ranked;
  for (const auto& c : candidates) {
    CandidateResult r;
    r.candidate = c;
    r.predicted_max_rate = predict_max_rate(policy_of(c), c.instances, curves.at(c.threads),
                                            o.objective.quantile, o.objective.limit_s);
    ranked.push_back(std::move(r));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const CandidateResult& a, const CandidateResult& b) {
                     const bool ua = is_unbatched(a.candidate, candidates),
                                ub = is_unbatched(b.candidate, candidates);
                     if (ua != ub) return ua;
                     return a.predicted_max_rate > b.predicted_max_rate;
                   });
  return ranked;
}

// What measuring one candidate needs of the search around it.
struct TrialClock {
  std::function<double()> elapsed;
  std::function<void(const std::string&)> report;
  std::size_t needed = 0;  // requests a run must hold for the objective's claim
};

// Load runs on one served candidate, from `rate` up 20% after a VALID run and down below what an
// overloaded run answered, until a VALID rate is bracketed, the trials are spent, or the budget
// is (then `stopped` says so). While every run holds, the climb goes on to twice the trials: a
// prediction that was low (the winner of section 26 was measured only to 1,664/s of 2,488/s)
// would otherwise end it below the knee.
void climb_rates(const ServeTuneOptions& o, ServedCandidate& served, const ServiceCurve& curve,
                 double rate, const TrialClock& at, CandidateResult& r, std::string& stopped) {
  const ServingCandidate& c = r.candidate;
  bool seen_invalid = false;
  for (std::size_t t = 0;
       t < o.trials_per_candidate || (!seen_invalid && t < 2 * o.trials_per_candidate); ++t) {
    const double duration = std::max(o.min_run_s, 1.25 * static_cast<double>(at.needed) / rate);
    if (at.elapsed() + duration > o.budget_s) {
      stopped = fmt::format("the budget ran out while measuring {}", c.label());
      return;
    }
    at.report(fmt::format("{} at {:.0f}/s", c.label(), rate));
    RateTrial trial;
    trial.rate_per_s = rate;
    trial.duration_s = duration;
    trial.predicted_s = predict_latency(policy_of(c), c.instances, curve, rate, 5000)
                            .quantile_s(o.objective.quantile);
    trial.summary = served.load(rate, duration);
    trial.valid = trial.summary.verdict && trial.summary.verdict->valid;
    r.trials.push_back(trial);
    if (trial.valid) {
      if (!r.best_trial || rate > r.trials[*r.best_trial].rate_per_s)
        r.best_trial = r.trials.size() - 1;
      if (seen_invalid) return;  // bracketed: valid here, invalid a step above
      rate *= 1.2;
    } else {
      seen_invalid = true;
      if (r.best_trial) return;
      // An overloaded server answers at about its capacity: go below that (or 20% lower).
      const double answered = trial.summary.throughput_per_s;
      rate = 0.8 * std::min(rate, answered > 0 ? answered : rate);
    }
  }
}

// Measured first, in the order run, the rest after; the winner the highest valid rate, or with
// expected requests the highest amortised rate (start-up weighed).
void crown(std::vector<CandidateResult> ranked, const std::vector<ServingCandidate>& candidates,
           double expected_requests, ServeTuneResult& result) {
  std::stable_partition(ranked.begin(), ranked.end(),
                        [](const CandidateResult& r) { return r.measured; });
  result.candidates = std::move(ranked);
  const auto& all = result.candidates;
  const auto score = [&](std::size_t i) {
    return amortised_rate(all[i].best_rate(), all[i].start_s, expected_requests);
  };
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& r = all[i];
    if (is_unbatched(r.candidate, candidates) && r.measured) result.unbatched = i;
    if (!r.best_trial) continue;
    if (!result.winner || score(i) > score(*result.winner)) result.winner = i;
    if (!result.fastest || r.best_rate() > all[*result.fastest].best_rate()) result.fastest = i;
    if (!result.quickest || r.start_s < all[*result.quickest].start_s) result.quickest = i;
  }
}

// The search's state across candidates: the time left, the start-up it expects, what the
// candidates measured taught the prediction, and the best rate so far.
struct Search {
  const ServeTuneOptions& o;
  ServingBackend& backend;
  TimeSource& clock;
  const TrialClock& at;
  ServeTuneResult& result;
  double start_s;             // the last server's time to ready (a guess before the first)
  double best = 0;            // the best rate measured
  double best_predicted = 0;  // its candidate's prediction
  // Each candidate measured: its bucket edges and token budget, and its best rate over its
  // prediction (none VALID: its lowest rate tried, which it did not hold).
  std::vector<std::pair<ServingCandidate, double>> errors;

  // Whether the budget holds one more start and run; once it does not, `result.stopped` says so.
  bool budget_left() {
    const double remaining = o.budget_s - at.elapsed();
    if (result.stopped.empty() && remaining >= start_s + o.min_run_s) return true;
    if (result.stopped.empty())
      result.stopped = fmt::format("the budget ran out ({:.0f} s left, a run needs {:.0f} s)",
                                   std::max(0.0, remaining), start_s + o.min_run_s);
    return false;
  }

  // One candidate in a fresh server, its rates climbed from `first_rate` (0: from the curve).
  void measure(CandidateResult& r, double first_rate) {
    const ServingCandidate& c = r.candidate;
    r.skipped.clear();
    at.report("serving " + c.label());
    const auto launched = clock.now();
    std::unique_ptr<ServedCandidate> served = backend.serve(c);
    start_s = to_seconds(clock.now() - launched);
    r.start_s = start_s;
    if (o.max_start_s > 0 && start_s > o.max_start_s) {
      r.skipped = fmt::format("ready {:.1f} s after launch, past --max-start {:g} s", start_s,
                              o.max_start_s);
      return;
    }
    r.measured = true;
    const ServiceCurve& curve = result.curves.at(c.threads);
    climb_rates(o, *served, curve, first_rate > 0 ? first_rate : 0.5 / curve.seconds(1), at, r,
                result.stopped);
    r.batch_sizes = served->batch_sizes();
    served.reset();
    if (r.trials.empty()) {  // the budget ended before its first run
      r.measured = false;
      r.skipped = "budget";
    }
    if (r.best_trial && r.predicted_max_rate > 0) {
      errors.emplace_back(c, r.best_rate() / r.predicted_max_rate);
    } else if (r.measured && r.predicted_max_rate > 0) {  // it held less than its lowest rate
      double lowest = r.trials.front().rate_per_s;
      for (const auto& t : r.trials) lowest = std::min(lowest, t.rate_per_s);
      errors.emplace_back(c, lowest / r.predicted_max_rate);
    }
    if (r.best_rate() > best) {
      best = r.best_rate();
      best_predicted = r.predicted_max_rate;
    }
  }

  // A candidate's prediction on the scale of the best's, where the model erred as it did (none
  // measured VALID yet: the prediction itself). The mean error would defer candidates predicted
  // as high as the best: a queue model blind to padding predicts every bucket set alike, and
  // those measured low pull the mean down.
  double expected_beside_best(const CandidateResult& r) const {
    return best_predicted > 0 ? r.predicted_max_rate * best / best_predicted
                              : r.predicted_max_rate;
  }

  // The rate a candidate is expected to hold: its prediction scaled by the best error measured
  // among candidates that pad as it does (its bucket edges and token budget), since the queue
  // model's error is mostly the padding it cannot see; with none measured, as the best's.
  double expected(const CandidateResult& r) const {
    double error = 0;
    for (const auto& [c, e] : errors)
      if (c.edges == r.candidate.edges && c.max_tokens == r.candidate.max_tokens &&
          (c.max_batch == 1) == (r.candidate.max_batch == 1))  // one a call pads nothing
        error = std::max(error, e);
    return error > 0 ? r.predicted_max_rate * error : expected_beside_best(r);
  }
};

// The pending candidates (`pending[i]`), measured in turn, each time the one expected highest
// (the unbatched reference first, ties in ranked order), until the budget ends; with `defer`, once
// the highest expected falls more than 20% below the best measured, the rest are deferred
// (`pending` then holds them, each saying why).
void measure_in_order(Search& s, std::vector<CandidateResult>& ranked, std::vector<bool>& pending,
                      const std::vector<ServingCandidate>& candidates, bool defer) {
  while (true) {
    std::optional<std::size_t> next;
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      if (!pending[i]) continue;
      const bool first = is_unbatched(ranked[i].candidate, candidates);
      if (!next || (first && !is_unbatched(ranked[*next].candidate, candidates)) ||
          (!is_unbatched(ranked[*next].candidate, candidates) &&
           s.expected(ranked[i]) > s.expected(ranked[*next])))
        next = i;
    }
    if (!next) return;
    CandidateResult& r = ranked[*next];
    if (!s.budget_left()) {
      if (defer)  // the first pass: the rest go unmeasured for the budget (deferred ones keep
                  // their reason)
        for (std::size_t i = 0; i < ranked.size(); ++i)
          if (pending[i]) {
            ranked[i].skipped = "budget";
            pending[i] = false;
          }
      return;
    }
    if (defer && !is_unbatched(r.candidate, candidates) && s.best > 0 &&
        s.expected(r) * 1.25 < s.best) {
      for (std::size_t i = 0; i < ranked.size(); ++i)
        if (pending[i])
          ranked[i].skipped = fmt::format("predicted {:.0f}/s, below the best measured ({:.0f}/s)",
                                          s.expected(ranked[i]), s.best);
      return;
    }
    pending[*next] = false;
    s.measure(r, 0.9 * s.expected(r));
  }
}

// The delays next to one a careful person tries next: half (0 below 0.1 ms) and twice (within
// the objective's limit); from no delay, 0.5 ms.
std::vector<double> neighbour_delays(double delay_s, double limit_s) {
  if (delay_s <= 0) return {0.0005};
  std::vector<double> out = {delay_s / 2 >= 1e-4 ? delay_s / 2 : 0.0};
  if (2 * delay_s < limit_s) out.push_back(2 * delay_s);
  return out;
}

// While the budget lasts, the best candidate's delay is halved and doubled, each neighbour
// served fresh and climbed from the best's rate; a neighbour that beats it is refined in turn.
// A grid of delays is coarse where the knee is sharp: 2 ms held 15-30% more rate than 1 ms on
// the encoder (docs/benchmarks.md, section 26).
void refine_best(Search& s, std::vector<CandidateResult>& ranked) {
  std::set<std::string> tried;
  for (const auto& r : ranked) tried.insert(r.candidate.label());
  while (true) {
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < ranked.size(); ++i)
      if (ranked[i].best_trial && (!best || ranked[i].best_rate() > ranked[*best].best_rate()))
        best = i;
    if (!best || ranked[*best].candidate.max_batch == 1) return;  // no delay without a batch
    const ServingCandidate around = ranked[*best].candidate;
    const double from = ranked[*best].best_rate();
    bool beaten = false;
    for (const double d : neighbour_delays(around.max_queue_delay_s, s.o.objective.limit_s)) {
      CandidateResult r;
      r.candidate = around;
      r.candidate.max_queue_delay_s = d;
      if (!tried.insert(r.candidate.label()).second) continue;
      if (!s.budget_left()) return;
      r.refined = true;
      r.predicted_max_rate =
          predict_max_rate(policy_of(r.candidate), r.candidate.instances,
                           s.result.curves.at(r.candidate.threads), s.o.objective.quantile,
                           s.o.objective.limit_s);
      ranked.push_back(std::move(r));
      s.measure(ranked.back(), from);
      if (ranked.back().best_rate() > from) {
        beaten = true;
        break;
      }
    }
    if (!beaten) return;
  }
}

}  // namespace

ServeTuneResult run_serve_tune(const ServeTuneOptions& o, ServingBackend& backend,
                               TimeSource& clock, const ServeTuneProgress& progress) {
  validate(o);
  const auto start = clock.now();
  TrialClock at;
  at.elapsed = [&] { return to_seconds(clock.now() - start); };
  at.report = [&](const std::string& phase) {
    if (progress) progress(phase, std::min(1.0, at.elapsed() / o.budget_s));
  };
  at.needed = samples_for_quantile_upper_bound(o.objective.quantile, kObjectiveConfidence) *
              (o.by_length ? 4 : 1);
  ServeTuneResult result;
  const std::vector<ServingCandidate> candidates = serving_candidates(o);
  std::set<std::size_t> thread_counts;
  for (const auto& c : candidates) thread_counts.insert(c.threads);
  std::vector<std::size_t> batches = o.max_batches;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  for (const auto t : thread_counts) {
    at.report(fmt::format("batch-latency curve at {} thread{}", t, t == 1 ? "" : "s"));
    result.curves[t] = backend.measure_curve(t, batches);
  }
  std::vector<CandidateResult> ranked = ranked_candidates(o, candidates, result.curves);

  Search search{o, backend, clock, at, result, o.server_start_s, 0, 0, {}};
  // Expected highest first; the rest, once far below the best measured, deferred.
  std::vector<bool> pending(ranked.size(), true);
  measure_in_order(search, ranked, pending, candidates, true);
  refine_best(search, ranked);
  // Then, while the budget lasts, the deferred ones (the prediction may be wrong), and the best's
  // delay again if one of them took the lead.
  pending.resize(ranked.size(), false);
  measure_in_order(search, ranked, pending, candidates, false);
  refine_best(search, ranked);
  crown(std::move(ranked), candidates, o.expected_requests, result);
  result.elapsed_s = at.elapsed();
  at.report("done");
  return result;
}

}  // namespace torchperf
