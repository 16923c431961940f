// A prediction of a dynamic-batching server's latency from the model's offline batch-latency
// curve: Poisson arrivals through the batcher's rule into `instances` parallel model copies,
// simulated event by event. serve-tune prints it beside the measured p99, so a user sees where
// the model of the server and the server disagree (HTTP, the load generator, cores shared).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "torchperf/serve/batching_policy.h"

namespace torchperf {

// Seconds one model call takes at each measured batch size (the median, from bench).
class ServiceCurve {
 public:
  ServiceCurve() = default;
  explicit ServiceCurve(std::map<std::size_t, double> seconds_by_batch);
  // Linear between measured sizes; below the smallest, the smallest's; above the largest, the
  // largest's time per sample times the batch. std::logic_error when empty.
  double seconds(std::size_t batch) const;
  bool empty() const { return points_.empty(); }
  const std::map<std::size_t, double>& points() const { return points_; }

 private:
  std::map<std::size_t, double> points_;
};

struct QueuePrediction {
  std::vector<double> latency_s;  // every simulated request's, ascending
  double utilization = 0;         // busy instance-time over the run's length and instances
  double quantile_s(double q) const;
};

// Simulates the Poisson arrivals (seeded) of requests / rate_per_s seconds, about `requests` of
// them, through the policy's batcher (max_batch, max_queue_delay; the queue bound is not
// modelled) and `instances` servers.
QueuePrediction predict_latency(const BatchingPolicy& policy, std::size_t instances,
                                const ServiceCurve& curve, double rate_per_s,
                                std::size_t requests = 20000, std::uint64_t seed = 1);

// The highest rate whose predicted quantile stays within limit_s (bisection to 1%), or 0 when
// even a trickle of requests misses it (a single call at batch 1 is over the limit).
double predict_max_rate(const BatchingPolicy& policy, std::size_t instances,
                        const ServiceCurve& curve, double quantile, double limit_s);

}  // namespace torchperf
