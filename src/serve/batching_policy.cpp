#include "torchperf/serve/batching_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "torchperf/error.h"

namespace torchperf {

void validate(const BatchingPolicy& policy) {
  if (policy.max_batch == 0) throw UsageError("--max-batch 0: expected at least 1");
  if (!(std::isfinite(policy.max_queue_delay_s) && policy.max_queue_delay_s >= 0))
    throw UsageError(fmt::format("--max-queue-delay {} s: expected a time of 0 or more",
                                 policy.max_queue_delay_s));
  if (policy.max_queue < policy.max_batch)
    throw UsageError(fmt::format("--max-queue {}: expected at least --max-batch ({})", policy.max_queue,
                                 policy.max_batch));
}

BatchDecision decide_batch(const BatchingPolicy& policy, std::size_t queued,
                           double oldest_waited_s) {
  if (queued == 0) return {0, std::numeric_limits<double>::infinity()};
  if (queued >= policy.max_batch) return {policy.max_batch, 0};
  if (oldest_waited_s >= policy.max_queue_delay_s) return {queued, 0};
  return {0, policy.max_queue_delay_s - oldest_waited_s};
}

}  // namespace torchperf
