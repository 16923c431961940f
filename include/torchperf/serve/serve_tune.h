// serve-tune's search: serving settings (instances, threads per instance, max_batch,
// max_queue_delay, bucket edges, token budget) each given the rate the queueing model predicts
// within the objective, then measured, the one expected highest first (the prediction scaled by
// what candidates that pad alike measured; those far below the best last, after the best's delay
// is refined), each by a fresh server and open-loop load at rising or falling rates, until the
// budget is spent. Where the servers run and how load reaches them is the backend's.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/measure/clock.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/serve/load_summary.h"
#include "torchperf/serve/queue_model.h"

namespace torchperf {

struct ServingCandidate {
  std::size_t instances = 1;
  std::size_t threads = 1;  // intra-op threads per instance
  std::size_t max_batch = 1;
  double max_queue_delay_s = 0;
  // Requests of a varying length (a --dim): the queue's bucket edges (empty: the server's
  // default) and padded tokens per call, at most (0: no budget).
  std::vector<std::int64_t> edges = {};
  std::int64_t max_tokens = 0;
  // "instances=1 threads=2 max_batch=8 delay=2ms" (then " buckets=32/64/512 tokens=2048")
  std::string label() const;
};

// One candidate's server, started fresh; destroyed: stopped.
class ServedCandidate {
 public:
  virtual ~ServedCandidate() = default;
  // Open-loop Poisson load at this rate for this long, judged against the objective.
  virtual LoadSummary load(double rate_per_s, double duration_s) = 0;
  // Model calls by batch size over every load run so far (from the server's /metrics).
  virtual std::map<std::size_t, std::size_t> batch_sizes() { return {}; }
};

class ServingBackend {
 public:
  virtual ~ServingBackend() = default;
  // Seconds per model call at each batch size, with this many intra-op threads (offline).
  virtual ServiceCurve measure_curve(std::size_t threads,
                                     const std::vector<std::size_t>& batches) = 0;
  virtual std::unique_ptr<ServedCandidate> serve(const ServingCandidate& candidate) = 0;
};

struct ServeTuneOptions {
  LatencyObjective objective;
  double budget_s = 900;
  std::size_t cores = 2;  // instances x threads never exceed it
  std::vector<std::size_t> instances;  // the instance counts to try; empty: every one that fits
  std::vector<std::size_t> threads;    // threads per instance to try; empty: every one that fits
  std::vector<std::size_t> max_batches = {1, 2, 4, 8, 16, 32};
  std::vector<double> delays_s = {0.001, 0.005};
  // Lengths that vary: the bucket edges and token budgets to try (each with every batch size
  // above 1), and the objective then holds for the longest quarter of requests by length too,
  // which needs about four times the requests a run would otherwise.
  std::vector<std::vector<std::int64_t>> bucket_sets = {{}};
  std::vector<std::int64_t> token_budgets = {0};
  bool by_length = false;
  std::size_t trials_per_candidate = 4;  // load runs bracketing a best rate (2x while all hold)
  double min_run_s = 5;                  // a load run's least length
  double server_start_s = 3;             // a guess until the first start is timed
  // Issue 62, start-up weighed: a server not ready within this many seconds of its launch is not
  // measured nor crowned (0: no cap). A deploy or a scale-out pays every start.
  double max_start_s = 0;
  // The requests a server is expected to answer over its life (0: start-up not weighed). The
  // winner is then the one that answers them soonest, its time to ready included: the highest
  // amortised_rate, not the highest rate.
  double expected_requests = 0;
};

// Requests a second over a server's life of `requests`, its start included: requests over
// (start_s + requests / rate); the rate itself when requests is 0, 0 for a rate of 0.
double amortised_rate(double rate, double start_s, double requests);

// The request count past which a server that holds more (fast_rate) but starts later
// (fast_start_s) has answered them all sooner than one that starts sooner (quick_*):
// (fast_start_s - quick_start_s) / (1 / quick_rate - 1 / fast_rate). nullopt when one is ahead
// at every count (it is both faster and ready sooner, or neither).
std::optional<double> break_even_requests(double fast_rate, double fast_start_s, double quick_rate,
                                          double quick_start_s);

// UsageError naming the option: no batch sizes or delays, a batch or core count of 0, a negative
// delay, a budget or run length that is not positive.
void validate(const ServeTuneOptions& options);

struct RateTrial {
  double rate_per_s = 0;
  double duration_s = 0;
  LoadSummary summary;
  bool valid = false;      // the objective's verdict
  double predicted_s = 0;  // the queueing model's quantile at this rate
};

struct CandidateResult {
  ServingCandidate candidate;
  double predicted_max_rate = 0;  // within the objective, by the queueing model
  std::vector<RateTrial> trials;  // in the order run
  bool measured = false;
  std::string skipped;  // why it was not measured (budget, cannot beat the best so far)
  // The highest rate that ran VALID, and its trial; nullopt when none did.
  std::optional<std::size_t> best_trial;
  std::map<std::size_t, std::size_t> batch_sizes;  // calls by batch size, over its runs
  double start_s = 0;  // time to ready: from launching its server to the server's port line
  // Not one of the options' candidates: the best's delay halved or doubled, tried with the
  // budget left after the first pass.
  bool refined = false;
  double best_rate() const;
};

struct ServeTuneResult {
  std::map<std::size_t, ServiceCurve> curves;  // by threads per instance
  std::vector<CandidateResult> candidates;     // in the order measured, then the rest
  // The highest valid rate, or with expected_requests the highest amortised rate.
  std::optional<std::size_t> winner;
  std::optional<std::size_t> fastest;  // the highest valid rate, start-up aside
  std::optional<std::size_t> quickest;  // of those with a valid rate, the soonest ready
  std::optional<std::size_t> unbatched;        // max_batch 1, one instance, all cores
  double elapsed_s = 0;
  std::string stopped;  // why measuring ended before every candidate was tried
};

// phase in words, fraction of the budget spent
using ServeTuneProgress = std::function<void(const std::string& phase, double fraction)>;

// Bucket edges worth trying for this length distribution: one bucket, the plans of 2 and of 4
// buckets that pad least (bucket_plan.h), and one bucket per length (only equal lengths share a
// call), without repeats.
std::vector<std::vector<std::int64_t>> bucket_sets_for(const LengthDistribution& lengths);

// The candidates of the options, every instances x threads that fits the cores.
std::vector<ServingCandidate> serving_candidates(const ServeTuneOptions& options);

ServeTuneResult run_serve_tune(const ServeTuneOptions& options, ServingBackend& backend,
                               TimeSource& clock, const ServeTuneProgress& progress = nullptr);

}  // namespace torchperf
