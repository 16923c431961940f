// What a load run shows: throughput, latency percentiles measured from the scheduled send times
// with distribution-free intervals, errors by kind, and whether enough requests were seen to claim
// a tail percentile against an objective (the early-stopping idea of MLPerf's LoadGen, here from
// order statistics: a p99 claim needs an upper bound on the p99 at 99% confidence).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/measure/quantile_bounds.h"

namespace torchperf {

// "2ms", "500us", "0.1s": a non-negative time with its unit, in seconds. UsageError naming
// `what` (the flag) otherwise.
double parse_latency(const std::string& text, const std::string& what);

// "p99=50ms": the quantile (p50 … p99.9, any 0 < p < 100) and the latency it must not exceed
// (with a unit: us, ms or s). UsageError naming the text otherwise.
struct LatencyObjective {
  double quantile = 0.99;
  double limit_s = 0;
  std::string text;  // as given, for messages
};
LatencyObjective parse_latency_objective(const std::string& text);

// How a request ended, as the load generator saw it.
enum class RequestOutcome {
  kOk,
  kRejected,     // 503: the server's queue was full
  kClientError,  // other 4xx: the request was malformed, or the model unknown
  kServerError,  // 5xx other than 503
  kTimeout,      // no answer within the generator's timeout
  kConnection,   // could not connect or the connection broke
};
std::string to_string(RequestOutcome outcome);

struct RequestRecord {
  double scheduled_s = 0;  // when the schedule said to send it (open loop), or when it was sent
  double sent_s = 0;       // when it left
  double done_s = 0;       // when the answer (or the failure) came
  RequestOutcome outcome = RequestOutcome::kOk;
  std::int64_t length = 0;  // its varying dimensions' size (load --dim); 0 when none vary
  std::string error = {};   // a refused or failed request: the server's message ("" otherwise)
};

// The latency of the answered requests whose length lies in [low, high] (load --dim).
struct LengthLatency {
  std::int64_t low = 0, high = 0;
  std::size_t ok = 0;
  double p50_s = 0, p99_s = 0;
};

struct PercentileLatency {
  double quantile = 0;  // 0.99
  double value_s = 0;
  Interval ci;  // NaN ends where the run is too short for them
};

struct ObjectiveVerdict {
  LatencyObjective objective;
  bool enough = false;       // enough requests for a bound at 99% confidence
  bool valid = false;        // enough, and the bound is within the limit
  double upper_bound_s = 0;  // the quantile's 99% upper bound; NaN when not enough
  std::size_t needed = 0;    // requests a bound needs
  std::string reason;        // the verdict in words
  // Lengths that vary: the same judgement of the longest quarter of requests by length, which
  // valid and enough include ("" without lengths).
  std::string longest_quarter;
  double longest_quarter_bound_s = 0;
};

struct LoadSummary {
  std::size_t requests = 0;
  std::size_t ok = 0;
  double duration_s = 0;
  double offered_per_s = 0;                // requests scheduled a second
  double throughput_per_s = 0;             // ok answers a second
  std::vector<PercentileLatency> latency;  // p50, p90, p99, p99.9 of the ok answers
  double max_send_lag_s = 0;  // the generator's own lateness: sent minus scheduled, at most
  double median_send_lag_s = 0;
  std::map<std::string, std::size_t> errors;  // by outcome, failures only
  // By outcome, the first message the server gave for one (what a refusal names: a length past
  // the served MAX, a batch past --max-client-batch).
  std::map<std::string, std::string> first_error;
  std::optional<ObjectiveVerdict> verdict;
  // Requests of varying lengths: the latency of each quarter of them by length, shortest first.
  std::vector<LengthLatency> by_length;
};

// The confidence of an objective's claim: one-sided, as MLPerf's early stopping.
constexpr double kObjectiveConfidence = 0.99;

// Latency is done minus scheduled. A failed request counts against an objective as a latency
// above any limit (it was not answered in time), and is left out of the percentiles.
LoadSummary summarize_load(const std::vector<RequestRecord>& records, double duration_s,
                           const std::optional<LatencyObjective>& objective,
                           double confidence = 0.95);

// The summary as JSON (latencies in seconds; intervals that do not exist are null).
nlohmann::json to_json(const LoadSummary& summary);

}  // namespace torchperf
