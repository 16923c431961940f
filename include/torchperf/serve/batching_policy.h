// The dynamic batcher's rule, apart from its threads and clock: given how many requests wait and
// how long the oldest has waited, run a batch now or wait. Pure, so that it is tested with
// scripted times; the server's queue calls it whenever a request arrives or a wait ends.
#pragma once

#include <cstddef>

namespace torchperf {

struct BatchingPolicy {
  std::size_t max_batch = 8;         // requests per model call, at most
  double max_queue_delay_s = 0.002;  // how long the oldest request may wait for others
  std::size_t max_queue = 256;       // requests waiting, at most: the next gets 503 at once
};

// UsageError naming the setting: max_batch 0, a delay that is negative or not finite, or a
// queue shorter than one batch.
void validate(const BatchingPolicy& policy);

struct BatchDecision {
  std::size_t take = 0;  // requests to run now (the oldest first); 0: wait
  double wait_s = 0;     // when take is 0: how long to wait before deciding again, unless a
                         // request arrives first (infinity when the queue is empty)
};

// A full batch runs at once; otherwise the queue waits for more until the oldest request has
// waited max_queue_delay, then runs what it has.
BatchDecision decide_batch(const BatchingPolicy& policy, std::size_t queued,
                           double oldest_waited_s);

// Whether a request that arrives now may join the queue (false: answer 503 at once).
inline bool admits(const BatchingPolicy& policy, std::size_t queued) {
  return queued < policy.max_queue;
}

}  // namespace torchperf
