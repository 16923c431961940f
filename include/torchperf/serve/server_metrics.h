// What the server counts, rendered in Prometheus's text exposition format for GET /metrics:
// requests by status, queue depth, the batch-size histogram, queue, compute and total latency
// histograms, and per length bucket its calls, fill, padding share and queue delay. Thread-safe: request threads and model instances update it concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace torchperf {

// Cumulative buckets with the given upper bounds (ascending; +Inf is added), a sum and a count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // NAME_bucket{le="…"} lines, NAME_sum and NAME_count, after # HELP and # TYPE.
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::size_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  std::size_t count_ = 0;
  mutable std::mutex mutex_;
};

// Latency buckets from 0.5 ms to 10 s, about three a decade.
std::vector<double> latency_buckets_s();
// Batch sizes 1, 2, 4, … up to max_batch (included).
std::vector<double> batch_size_buckets(std::size_t max_batch);

// Model calls by batch-size bucket (its upper bound) from GET /metrics's text, the cumulative
// buckets turned back into counts per bucket; empty when the text has no batch-size histogram.
std::map<std::size_t, std::size_t> parse_batch_size_histogram(const std::string& metrics_text);

// One call formed from a length bucket: its requests, their tokens (samples x length; samples for
// a model without a length) as sent and as padded, and the time they waited, summed.
struct BucketCall {
  std::size_t requests = 0;
  std::int64_t useful_tokens = 0;
  std::int64_t padded_tokens = 0;
  double queue_s = 0;
  std::size_t off_plan = 0;  // its model calls at a shape the shape plan did not prepare
};

class ServerMetrics {
 public:
  explicit ServerMetrics(std::size_t max_batch);
  void count_response(int http_status);
  void set_queue_depth(std::size_t depth);
  void observe_batch(std::size_t size);
  void observe_request(double queue_s, double compute_s, double total_s);
  // A call from the bucket labelled `bucket` (its edge, or "all").
  void observe_bucket(const std::string& bucket, const BucketCall& call);
  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<int, std::size_t> responses_;
  std::size_t queue_depth_ = 0;
  std::size_t max_batch_;
  struct BucketTotals {
    std::size_t calls = 0;
    BucketCall sum;
  };
  std::map<std::string, BucketTotals> buckets_;
  void render_buckets(std::string& out) const;
  Histogram batch_size_;
  Histogram queue_s_, compute_s_, total_s_;
};

}  // namespace torchperf
