#include "torchperf/serve/serve_tune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>

#include "torchperf/error.h"

namespace torchperf {
namespace {

// 10 ms a call plus 1 ms a sample at 2 threads; one thread is 1.8x slower.
ServiceCurve curve_at(std::size_t threads) {
  const double f = threads == 1 ? 1.8 : 1.0;
  return ServiceCurve({{1, 0.011 * f}, {8, 0.018 * f}, {32, 0.042 * f}});
}

// A server whose latencies are the queueing model's on a curve 20% slower than the offline one
// (the HTTP path and the load generator share the cores), on a scripted clock.
class FakeServed final : public ServedCandidate {
 public:
  FakeServed(ServingCandidate c, ManualTimeSource& clock, LatencyObjective objective,
             double slowdown = 1)
      : c_(c), clock_(clock), objective_(objective), slowdown_(slowdown) {}
  LoadSummary load(double rate, double duration) override {
    const auto n = static_cast<std::size_t>(rate * duration);
    std::map<std::size_t, double> slower;
    const ServiceCurve offline = curve_at(c_.threads);
    for (const auto& [b, s] : offline.points()) slower[b] = 1.2 * slowdown_ * s;
    const QueuePrediction p = predict_latency({c_.max_batch, c_.max_queue_delay_s, 256},
                                              c_.instances, ServiceCurve(slower), rate, n, 3);
    std::vector<RequestRecord> records;
    // A Poisson schedule of n expected arrivals may hold a few fewer.
    for (std::size_t i = 0; i < p.latency_s.size(); ++i) {
      const double at = static_cast<double>(i) / rate;
      records.push_back({at, at, at + p.latency_s[i], RequestOutcome::kOk});
    }
    clock_.advance(
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration)));
    return summarize_load(records, duration, objective_);
  }

 private:
  ServingCandidate c_;
  ManualTimeSource& clock_;
  LatencyObjective objective_;
  double slowdown_;
};

class FakeBackend final : public ServingBackend {
 public:
  FakeBackend(ManualTimeSource& clock, LatencyObjective objective)
      : clock_(clock), objective_(objective) {}
  ServiceCurve measure_curve(std::size_t threads, const std::vector<std::size_t>&) override {
    clock_.advance(std::chrono::seconds(10));
    return curve_at(threads);
  }
  std::unique_ptr<ServedCandidate> serve(const ServingCandidate& c) override {
    served.push_back(c);
    clock_.advance(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(start_s ? start_s(c) : 2.0)));
    const auto slow = slowdown.find(c.edges);
    return std::make_unique<FakeServed>(
        c, clock_, objective_, c.max_batch > 1 && slow != slowdown.end() ? slow->second : 1.0);
  }
  std::vector<ServingCandidate> served;
  // Calls this much dearer with these bucket edges (padding the queue model does not see).
  std::map<std::vector<std::int64_t>, double> slowdown;
  // Seconds a candidate's server takes to be ready (default 2).
  std::function<double(const ServingCandidate&)> start_s;

 private:
  ManualTimeSource& clock_;
  LatencyObjective objective_;
};

ServeTuneOptions options(double budget_s) {
  ServeTuneOptions o;
  o.objective = parse_latency_objective("p99=100ms");
  o.budget_s = budget_s;
  o.cores = 2;
  o.max_batches = {1, 8, 32};
  o.delays_s = {0.002};
  return o;
}

TEST(ServeTuneTest, AServerNotReadyWithinTheStartCapIsNeitherMeasuredNorCrowned) {
  ManualTimeSource clock;
  ServeTuneOptions o = options(600);
  o.max_start_s = 1;  // the fake servers take 2 s
  FakeBackend backend(clock, o.objective);
  const ServeTuneResult r = run_serve_tune(o, backend, clock);
  EXPECT_FALSE(r.winner);
  ASSERT_FALSE(backend.served.empty());
  for (const auto& c : r.candidates) {
    EXPECT_FALSE(c.measured);
    EXPECT_TRUE(c.trials.empty());
  }
  EXPECT_EQ(r.candidates[0].skipped, "ready 2.0 s after launch, past --max-start 1 s");
  o.max_start_s = 3;
  FakeBackend quick(clock, o.objective);
  EXPECT_TRUE(run_serve_tune(o, quick, clock).winner);
  o.max_start_s = -1;
  EXPECT_THROW(validate(o), UsageError);
}

// Issue 62, part 4: a server that takes long to start (here one that prepares more shapes the
// more a call holds) wins only when enough requests pay for its start.
TEST(ServeTuneTest, ExpectedRequestsWeighStartUpAndTheBreakEvenIsWhereTheFastestCatchesUp) {
  ServeTuneOptions o = options(1200);
  const auto start = [](const ServingCandidate& c) { return 1.0 + static_cast<double>(c.max_batch); };
  ManualTimeSource clock;
  FakeBackend backend(clock, o.objective);
  backend.start_s = start;
  const ServeTuneResult by_rate = run_serve_tune(o, backend, clock);
  ASSERT_TRUE(by_rate.winner && by_rate.fastest && by_rate.quickest);
  EXPECT_EQ(*by_rate.winner, *by_rate.fastest);
  const CandidateResult& fast = by_rate.candidates[*by_rate.fastest];
  const CandidateResult& quick = by_rate.candidates[*by_rate.quickest];
  EXPECT_GT(fast.start_s, quick.start_s);
  EXPECT_GT(fast.best_rate(), quick.best_rate());
  const auto n = break_even_requests(fast.best_rate(), fast.start_s, quick.best_rate(), quick.start_s);
  ASSERT_TRUE(n);
  // At the break-even both have answered n requests at the same moment.
  EXPECT_NEAR(fast.start_s + *n / fast.best_rate(), quick.start_s + *n / quick.best_rate(), 1e-6);

  o.expected_requests = 0.5 * *n;  // too few to pay for the fastest's start
  ManualTimeSource clock2;
  FakeBackend weighed(clock2, o.objective);
  weighed.start_s = start;
  const ServeTuneResult few = run_serve_tune(o, weighed, clock2);
  ASSERT_TRUE(few.winner);
  const CandidateResult& w = few.candidates[*few.winner];
  for (const auto& c : few.candidates) {
    if (!c.best_trial) continue;
    EXPECT_GE(amortised_rate(w.best_rate(), w.start_s, o.expected_requests),
              amortised_rate(c.best_rate(), c.start_s, o.expected_requests))
        << c.candidate.label();
  }
  EXPECT_LT(w.start_s, few.candidates[*few.fastest].start_s);
  o.expected_requests = -1;
  EXPECT_THROW(validate(o), UsageError);
}

TEST(ServeTuneTest, AmortisedRateAndBreakEvenFollowTheirFormulas) {
  EXPECT_DOUBLE_EQ(amortised_rate(100, 5, 0), 100);           // not weighed
  EXPECT_DOUBLE_EQ(amortised_rate(100, 5, 1000), 1000 / 15.0);  // 5 s start + 10 s of requests
  EXPECT_DOUBLE_EQ(amortised_rate(0, 5, 1000), 0);
  // 10 s later but 80/s against 40/s: (11 - 1) / (1/40 - 1/80) = 800 requests.
  EXPECT_NEAR(*break_even_requests(80, 11, 40, 1), 800, 1e-9);
  EXPECT_FALSE(break_even_requests(80, 1, 40, 11));  // faster and sooner: ahead at every count
  EXPECT_FALSE(break_even_requests(40, 11, 80, 1));
}

TEST(ServeTuneTest, CandidatesCoverInstancesAndThreadsThatFitTheCores) {
  ServeTuneOptions o = options(100);
  o.delays_s = {0.001, 0.005};
  const auto c = serving_candidates(o);
  // (1 instance x 1 or 2 threads, 2 x 1) x (batch 1 with one delay + batches 8, 32 with two)
  EXPECT_EQ(c.size(), 3u * 5u);
  for (const auto& x : c) EXPECT_LE(x.instances * x.threads, 2u);
}

TEST(ServeTuneTest, InstancesAndThreadsCanBeFixed) {
  ServeTuneOptions o = options(100);
  o.instances = {1};
  o.threads = {2};
  const auto c = serving_candidates(o);
  EXPECT_EQ(c.size(), 3u);  // batches 1, 8, 32
  for (const auto& x : c) EXPECT_EQ(x.instances * x.threads, 2u);
  o.instances = {3};
  EXPECT_THROW(serving_candidates(o), UsageError);
}

TEST(ServeTuneTest, TheUnbatchedServerIsMeasuredFirstAndBatchingWins) {
  ManualTimeSource clock;
  const ServeTuneOptions o = options(600);
  FakeBackend backend(clock, o.objective);
  const ServeTuneResult r = run_serve_tune(o, backend, clock);
  ASSERT_FALSE(backend.served.empty());
  EXPECT_EQ(backend.served[0].max_batch, 1u);
  EXPECT_EQ(backend.served[0].threads, 2u);
  ASSERT_TRUE(r.winner);
  ASSERT_TRUE(r.unbatched);
  const auto& winner = r.candidates[*r.winner];
  EXPECT_GT(winner.candidate.max_batch, 1u);
  EXPECT_GT(winner.best_rate(), 3 * r.candidates[*r.unbatched].best_rate());
  // Its best rate ran VALID, and 20% more did not (or the trials ran out).
  const RateTrial& best = winner.trials[*winner.best_trial];
  EXPECT_TRUE(best.valid);
  EXPECT_GE(best.summary.requests, 459u);
  EXPECT_EQ(r.curves.size(), 2u);
}

TEST(ServeTuneTest, TheBudgetIsKeptAndWhatWasNotMeasuredSaysWhy) {
  ManualTimeSource clock;
  const ServeTuneOptions o = options(60);
  FakeBackend backend(clock, o.objective);
  const ServeTuneResult r = run_serve_tune(o, backend, clock);
  EXPECT_LE(r.elapsed_s, 60.0);
  EXPECT_FALSE(r.stopped.empty());
  bool skipped = false;
  for (const auto& c : r.candidates)
    if (!c.measured) {
      EXPECT_FALSE(c.skipped.empty());
      skipped = true;
    }
  EXPECT_TRUE(skipped);
}

TEST(ServeTuneTest, CandidatesPredictedToFallFarShortComeLastAndTheBudgetIsUsed) {
  ManualTimeSource clock;
  const ServeTuneOptions o = options(3600);
  FakeBackend backend(clock, o.objective);
  const ServeTuneResult r = run_serve_tune(o, backend, clock);
  // With time enough, every candidate is measured, the deferred ones after the others.
  EXPECT_EQ(backend.served.size(), r.candidates.size());
  EXPECT_TRUE(r.stopped.empty()) << r.stopped;
  for (const auto& c : r.candidates) EXPECT_TRUE(c.measured) << c.candidate.label();
  // The last one served is the one-thread, one-request-per-call server: predicted slowest.
  EXPECT_EQ(backend.served.back().max_batch, 1u);
  EXPECT_EQ(backend.served.back().threads, 1u);
}

TEST(ServeTuneTest, TheBestsDelayIsHalvedAndDoubledBeforeTheDeferredAreMeasured) {
  ManualTimeSource clock;
  const ServeTuneOptions o = options(3600);  // one delay: 2 ms
  FakeBackend backend(clock, o.objective);
  const ServeTuneResult r = run_serve_tune(o, backend, clock);
  const auto same_but_delay = [](const ServingCandidate& a, const ServingCandidate& b) {
    return a.instances == b.instances && a.threads == b.threads && a.max_batch == b.max_batch;
  };
  std::vector<const CandidateResult*> refined;
  for (const auto& c : r.candidates)
    if (c.refined) refined.push_back(&c);
  ASSERT_FALSE(refined.empty());
  // The first: the first pass's best with its 2 ms halved, climbed from the rate the best held.
  const CandidateResult& first = *refined.front();
  EXPECT_EQ(first.candidate.max_queue_delay_s, 0.001);
  EXPECT_GT(first.candidate.max_batch, 1u);
  ASSERT_TRUE(first.measured);
  const auto best = std::find_if(r.candidates.begin(), r.candidates.end(), [&](const auto& c) {
    return !c.refined && same_but_delay(c.candidate, first.candidate);
  });
  ASSERT_NE(best, r.candidates.end());
  EXPECT_EQ(first.trials.front().rate_per_s, best->best_rate());
  // Each refined one is half or twice the delay of another with the same settings.
  for (const CandidateResult* x : refined) {
    const bool neighbour =
        std::any_of(r.candidates.begin(), r.candidates.end(), [&](const CandidateResult& c) {
          const double d = c.candidate.max_queue_delay_s, e = x->candidate.max_queue_delay_s;
          return &c != x && same_but_delay(c.candidate, x->candidate) && (e == d / 2 || e == 2 * d);
        });
    EXPECT_TRUE(neighbour) << x->candidate.label();
  }
  // No label is served twice; the one-thread unbatched server, deferred, still comes last.
  std::set<std::string> labels;
  for (const auto& c : backend.served) EXPECT_TRUE(labels.insert(c.label()).second) << c.label();
  EXPECT_EQ(backend.served.back().max_batch, 1u);
  EXPECT_EQ(backend.served.back().threads, 1u);
}

TEST(ServeTuneTest, ABucketSetMeasuredSlowComesAfterTheOthersAtTheNextBatchSize) {
  ManualTimeSource clock;
  ServeTuneOptions o = options(3600);
  o.instances = {1};
  o.threads = {2};
  o.bucket_sets = {{512}, {64, 512}};
  FakeBackend backend(clock, o.objective);
  backend.slowdown[{512}] = 3;  // one bucket pads every call to the longest
  const ServeTuneResult r = run_serve_tune(o, backend, clock);
  const auto position = [&](std::size_t batch, std::vector<std::int64_t> edges) {
    for (std::size_t i = 0; i < backend.served.size(); ++i)
      if (backend.served[i].max_batch == batch && backend.served[i].edges == edges &&
          backend.served[i].max_queue_delay_s == 0.002)
        return i;
    return backend.served.size();
  };
  // Batch 32 with one bucket is tried first (the model predicts both sets alike; ranked order
  // breaks the tie) and is slow; at batch 8 the other set is tried before it.
  EXPECT_LT(position(32, {512}), position(32, {64, 512}));
  EXPECT_LT(position(8, {64, 512}), position(8, {512}));
  ASSERT_TRUE(r.winner);
  EXPECT_EQ(r.candidates[*r.winner].candidate.edges, (std::vector<std::int64_t>{64, 512}));
}

TEST(ServeTuneTest, DeferredCandidatesSayWhyWhenTheBudgetEndsFirst) {
  ManualTimeSource clock;
  const ServeTuneOptions o = options(150);
  FakeBackend backend(clock, o.objective);
  const ServeTuneResult r = run_serve_tune(o, backend, clock);
  bool deferred = false;
  for (const auto& c : r.candidates)
    deferred = deferred || c.skipped.find("below the best measured") != std::string::npos;
  EXPECT_TRUE(deferred);
  EXPECT_LE(r.elapsed_s, 150.0);
}

TEST(ServeTuneTest, LengthsThatVaryAddBucketEdgesAndTokenBudgetsToEveryBatchAbove1) {
  ServeTuneOptions o = options(100);
  o.instances = {1};
  o.threads = {2};
  o.bucket_sets = {{512}, {64, 512}};
  o.token_budgets = {0, 2048};
  const auto c = serving_candidates(o);
  // batch 1 once (buckets and budgets change nothing for one request a call), 8 and 32 x 2 x 2
  EXPECT_EQ(c.size(), 1u + 2u * 4u);
  std::size_t budgeted = 0;
  for (const auto& x : c) budgeted += x.max_tokens == 2048 && x.edges.size() == 2;
  EXPECT_EQ(budgeted, 2u);
  EXPECT_EQ(c.back().label(),
            "instances=1 threads=2 max_batch=32 delay=2ms buckets=64/512 tokens=2048");
  o.token_budgets = {-1};
  EXPECT_THROW(validate(o), UsageError);
}

TEST(ServeTuneTest, BucketEdgesToTryFollowTheLengthDistribution) {
  const auto sets = bucket_sets_for(parse_dim_option("S=lognormal:40:0.9:4..512").distribution);
  ASSERT_EQ(sets.size(), 4u);
  EXPECT_EQ(sets.front(), std::vector<std::int64_t>{512}) << "one bucket";
  EXPECT_EQ(sets.back().size(), 512u) << "one bucket per length";
  for (const auto& e : {sets[1], sets[2]}) {
    EXPECT_EQ(e.back(), 512);
    EXPECT_TRUE(std::is_sorted(e.begin(), e.end()));
    for (const auto x : e) EXPECT_EQ(x % 8, 0) << x;
  }
  EXPECT_EQ(sets[1].size(), 2u) << "planned: two buckets";
  EXPECT_EQ(sets[2].size(), 4u) << "planned: four";
}

TEST(ServeTuneTest, ByLengthARunIsLongEnoughForTheLongestQuartersClaim) {
  ManualTimeSource clock;
  ServeTuneOptions o = options(600);
  FakeBackend backend(clock, o.objective);
  const ServeTuneResult r = run_serve_tune(o, backend, clock);
  ASSERT_TRUE(r.winner);
  const auto& w = r.candidates[*r.winner];
  EXPECT_GE(w.trials[*w.best_trial].summary.requests, 4u * 459u);
}

TEST(ServeTuneTest, BadOptionsAreRefusedNamingThem) {
  ServeTuneOptions o = options(60);
  o.max_batches = {};
  EXPECT_THROW(validate(o), UsageError);
  o = options(60);
  o.delays_s = {-1};
  EXPECT_THROW(validate(o), UsageError);
  o = options(0);
  EXPECT_THROW(validate(o), UsageError);
  o = options(60);
  o.cores = 0;
  EXPECT_THROW(validate(o), UsageError);
}

}  // namespace
}  // namespace torchperf
