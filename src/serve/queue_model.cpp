#include "torchperf/serve/queue_model.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "torchperf/measure/statistics.h"
#include "torchperf/serve/arrivals.h"

namespace torchperf {

ServiceCurve::ServiceCurve(std::map<std::size_t, double> seconds_by_batch)
    : points_(std::move(seconds_by_batch)) {
  for (const auto& [batch, s] : points_)
    if (batch == 0 || !(s > 0)) throw std::invalid_argument("ServiceCurve: batch >= 1, time > 0");
}

double ServiceCurve::seconds(std::size_t batch) const {
  if (points_.empty()) throw std::logic_error("ServiceCurve::seconds: no points");
  const auto hi = points_.lower_bound(batch);
  if (hi == points_.end()) {
    const auto& [b, s] = *points_.rbegin();
    return s / static_cast<double>(b) * static_cast<double>(batch);
  }
  if (hi->first == batch || hi == points_.begin()) return hi->second;
  const auto lo = std::prev(hi);
  const double f =
      static_cast<double>(batch - lo->first) / static_cast<double>(hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

double QueuePrediction::quantile_s(double q) const { return quantile_sorted(latency_s, q); }

QueuePrediction predict_latency(const BatchingPolicy& policy, std::size_t instances,
                                const ServiceCurve& curve, double rate_per_s, std::size_t requests,
                                std::uint64_t seed) {
  validate(policy);
  if (instances == 0 || requests == 0 || !(rate_per_s > 0))
    throw std::invalid_argument("predict_latency: instances, requests and rate must be positive");
  ArrivalPlan plan;
  plan.rate_per_s = rate_per_s;
  plan.duration_s = static_cast<double>(requests) / rate_per_s;
  plan.seed = seed;
  const std::vector<double> arrivals = schedule_arrivals(plan);
  const std::size_t n = arrivals.size();
  std::vector<double> free_at(instances, 0.0);
  std::vector<double> latency;
  latency.reserve(n);
  std::deque<std::size_t> queue;
  std::size_t next = 0;
  double busy = 0, end = 0;
  while (latency.size() < n) {
    // The instance that frees first takes the next batch: one shared queue, FIFO.
    const auto j = static_cast<std::size_t>(std::min_element(free_at.begin(), free_at.end()) -
                                            free_at.begin());
    const double t = free_at[j];
    while (next < n && arrivals[next] <= t) queue.push_back(next++);
    if (queue.empty()) queue.push_back(next++);
    // The batcher runs a full batch at once, else what it has once the oldest has waited.
    const double deadline = std::max(t, arrivals[queue.front()] + policy.max_queue_delay_s);
    while (next < n && queue.size() < policy.max_batch && arrivals[next] <= deadline)
      queue.push_back(next++);
    const std::size_t take = std::min(policy.max_batch, queue.size());
    const double start = queue.size() >= policy.max_batch
                             ? std::max(t, arrivals[queue[policy.max_batch - 1]])
                             : deadline;
    const double service = curve.seconds(take);
    const double done = start + service;
    for (std::size_t i = 0; i < take; ++i) {
      latency.push_back(done - arrivals[queue.front()]);
      queue.pop_front();
    }
    free_at[j] = done;
    busy += service;
    end = std::max(end, done);
  }
  std::sort(latency.begin(), latency.end());
  QueuePrediction p;
  p.latency_s = std::move(latency);
  p.utilization = end > 0 ? busy / (end * static_cast<double>(instances)) : 0;
  return p;
}

double predict_max_rate(const BatchingPolicy& policy, std::size_t instances,
                        const ServiceCurve& curve, double quantile, double limit_s) {
  const auto meets = [&](double rate) {
    return predict_latency(policy, instances, curve, rate, 5000).quantile_s(quantile) <= limit_s;
  };
  // Capacity: every instance busy with full batches.
  const double capacity =
      static_cast<double>(instances * policy.max_batch) / curve.seconds(policy.max_batch);
  double lo = capacity * 1e-3, hi = capacity;
  if (!meets(lo)) return 0;
  if (meets(hi)) return hi;
  while (hi / lo > 1.01) {
    const double mid = std::sqrt(lo * hi);
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace torchperf
