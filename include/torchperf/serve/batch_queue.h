// The server's bounded request queue: requests wait in arrival order until the batching policy
// says to run them, then an instance takes them as one batch. A full queue refuses at once (the
// caller answers 503) rather than growing; closing it lets the instances drain what is queued.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include "torchperf/measure/clock.h"
#include "torchperf/serve/batching_policy.h"

namespace torchperf {

template <typename Job>
class BatchQueue {
 public:
  // The clock stamps arrivals and reads how long the oldest has waited; it must outlive the queue.
  BatchQueue(BatchingPolicy policy, TimeSource& clock) : policy_(policy), clock_(clock) {
    validate(policy_);
  }

  // Queues a job; false when the queue is full or closed.
  bool push(Job job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_ || !admits(policy_, waiting_.size())) return false;
      waiting_.push_back({std::move(job), clock_.now()});
    }
    changed_.notify_all();
    return true;
  }

  // Blocks until a batch is due and returns it, oldest first; an empty batch once the queue is
  // closed and drained. After close(), what is queued runs without waiting for more.
  std::vector<Job> next_batch() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (waiting_.empty()) {
        if (closed_) return {};
        changed_.wait(lock);
        continue;
      }
      const double waited = closed_ ? std::numeric_limits<double>::infinity()
                                    : to_seconds(clock_.now() - waiting_.front().arrived);
      const BatchDecision d = decide_batch(policy_, waiting_.size(), waited);
      if (d.take > 0) {
        std::vector<Job> batch;
        batch.reserve(d.take);
        for (std::size_t i = 0; i < d.take; ++i) {
          batch.push_back(std::move(waiting_.front().job));
          waiting_.pop_front();
        }
        return batch;
      }
      changed_.wait_for(lock, std::chrono::duration<double>(d.wait_s));
    }
  }

  // No more jobs are accepted; instances drain the queue, then get empty batches.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_.size();
  }

 private:
  struct Waiting {
    Job job;
    Clock::time_point arrived;
  };
  const BatchingPolicy policy_;
  TimeSource& clock_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Waiting> waiting_;
  bool closed_ = false;
};

}  // namespace torchperf
