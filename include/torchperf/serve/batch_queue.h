// The server's bounded request queue: requests wait in arrival order, in the bucket their length
// falls in, until the batching policy says a bucket's batch is due; then an instance takes it as
// one call. A full queue refuses at once (the caller answers 503) rather than growing; closing it
// lets the instances drain what is queued.
#pragma once

#include <algorithm>
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
  BatchQueue(BatchingPolicy policy, TimeSource& clock)
      : policy_(std::move(policy)),
        clock_(clock),
        buckets_(std::max<std::size_t>(1, policy_.edges.size())) {
    validate(policy_);
  }

  // Queues a job of this size in its bucket; false when the queue is full or closed.
  bool push(Job job, QueuedSize size = {}) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_ || !admits(policy_, queued_)) return false;
      Bucket& b = buckets_[bucket_of(policy_, size.length)];
      b.jobs.push_back({std::move(job), clock_.now()});
      b.sizes.push_back(size);
      ++queued_;
    }
    changed_.notify_all();
    return true;
  }

  // Blocks until a bucket's batch is due and returns it, oldest first (of the due buckets, the one
  // whose oldest request has waited longest); an empty batch once the queue is closed and
  // drained. After close(), what is queued runs without waiting for more. `bucket`, when given,
  // is set to the batch's bucket.
  std::vector<Job> next_batch(std::size_t* bucket = nullptr) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (queued_ == 0) {
        if (closed_) return {};
        changed_.wait(lock);
        continue;
      }
      const auto now = clock_.now();
      std::size_t due = buckets_.size();
      std::size_t take = 0;
      double wait_s = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < buckets_.size(); ++i) {
        const Bucket& b = buckets_[i];
        if (b.jobs.empty()) continue;
        const double waited = closed_ ? std::numeric_limits<double>::infinity()
                                      : to_seconds(now - b.jobs.front().arrived);
        const BatchDecision d = decide_bucket(policy_, b.sizes, waited);
        if (d.take == 0) {
          wait_s = std::min(wait_s, d.wait_s);
        } else if (due == buckets_.size() ||
                   b.jobs.front().arrived < buckets_[due].jobs.front().arrived) {
          due = i;
          take = d.take;
        }
      }
      if (due < buckets_.size()) {
        if (bucket) *bucket = due;
        return take_from(buckets_[due], take);
      }
      changed_.wait_for(lock, std::chrono::duration<double>(wait_s));
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
    return queued_;
  }

  const BatchingPolicy& policy() const { return policy_; }

 private:
  struct Waiting {
    Job job;
    Clock::time_point arrived;
  };
  struct Bucket {
    std::deque<Waiting> jobs;
    std::vector<QueuedSize> sizes;  // the jobs', in the same order
  };

  std::vector<Job> take_from(Bucket& b, std::size_t take) {
    std::vector<Job> batch;
    batch.reserve(take);
    for (std::size_t i = 0; i < take; ++i) {
      batch.push_back(std::move(b.jobs.front().job));
      b.jobs.pop_front();
    }
    b.sizes.erase(b.sizes.begin(), b.sizes.begin() + static_cast<std::ptrdiff_t>(take));
    queued_ -= take;
    return batch;
  }

  const BatchingPolicy policy_;
  TimeSource& clock_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Bucket> buckets_;
  std::size_t queued_ = 0;
  bool closed_ = false;
};

}  // namespace torchperf
