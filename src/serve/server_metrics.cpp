#include "torchperf/serve/server_metrics.h"

#include <fmt/format.h>

#include <regex>

#include <algorithm>
#include <stdexcept>

namespace torchperf {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()))
    throw std::invalid_argument("Histogram: bucket bounds must ascend");
}

void Histogram::observe(double value) {
  // A bucket counts the values at most its bound (Prometheus's le).
  const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[static_cast<std::size_t>(at)];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  std::size_t cumulative = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name,
                     sum_, name, count_);
}

std::vector<double> latency_buckets_s() {
  return {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10};
}

std::vector<double> batch_size_buckets(std::size_t max_batch) {
  std::vector<double> b;
  for (std::size_t s = 1; s < max_batch; s *= 2) b.push_back(static_cast<double>(s));
  b.push_back(static_cast<double>(std::max<std::size_t>(max_batch, 1)));
  return b;
}

ServerMetrics::ServerMetrics(std::size_t max_batch)
    : max_batch_(std::max<std::size_t>(1, max_batch)),
      batch_size_(batch_size_buckets(max_batch)),
      queue_s_(latency_buckets_s()),
      compute_s_(latency_buckets_s()),
      total_s_(latency_buckets_s()) {}

void ServerMetrics::count_response(int http_status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++responses_[http_status];
}

void ServerMetrics::set_queue_depth(std::size_t depth) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_depth_ = depth;
}

void ServerMetrics::observe_batch(std::size_t size) {
  batch_size_.observe(static_cast<double>(size));
}

void ServerMetrics::observe_request(double queue_s, double compute_s, double total_s) {
  queue_s_.observe(queue_s);
  compute_s_.observe(compute_s);
  total_s_.observe(total_s);
}

void ServerMetrics::observe_bucket(const std::string& bucket, const BucketCall& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  BucketTotals& t = buckets_[bucket];
  ++t.calls;
  t.sum.requests += call.requests;
  t.sum.useful_tokens += call.useful_tokens;
  t.sum.padded_tokens += call.padded_tokens;
  t.sum.queue_s += call.queue_s;
  t.sum.off_plan += call.off_plan;
}

// Called with mutex_ held. Counters to rate over, and the three figures a reader asks of a
// bucket (how full its calls are, how much of them is padding, how long a request waits) as
// gauges over the server's life.
void ServerMetrics::render_buckets(std::string& out) const {
  if (buckets_.empty()) return;
  const auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& [bucket, t] : buckets_)
      out += fmt::format("{}{{bucket=\"{}\"}} {}\n", name, bucket, value(t));
  };
  family("torchperf_bucket_calls_total", "counter",
         "Batches formed from each length bucket (labelled by its edge; one model call each "
         "where lengths merge).",
         [](const BucketTotals& t) { return t.calls; });
  family("torchperf_bucket_requests_total", "counter", "Requests answered from each bucket.",
         [](const BucketTotals& t) { return t.sum.requests; });
  family("torchperf_bucket_padded_tokens_total", "counter",
         "Tokens the bucket's calls ran, padding included (samples x padded length).",
         [](const BucketTotals& t) { return t.sum.padded_tokens; });
  family("torchperf_bucket_off_plan_calls_total", "counter",
         "Model calls from each bucket at a shape the server's shape plan did not prepare "
         "(uncaptured where it captures CUDA graphs); 0 without a plan (--shapes lazy).",
         [](const BucketTotals& t) { return t.sum.off_plan; });
  family("torchperf_bucket_fill", "gauge", "Requests per call over --max-batch, on average.",
         [&](const BucketTotals& t) {
           return static_cast<double>(t.sum.requests) / static_cast<double>(t.calls * max_batch_);
         });
  family("torchperf_bucket_padding_share", "gauge", "The share of the calls' tokens that is padding.",
         [](const BucketTotals& t) {
           return t.sum.padded_tokens > 0 ? 1.0 - static_cast<double>(t.sum.useful_tokens) /
                                                      static_cast<double>(t.sum.padded_tokens)
                                          : 0.0;
         });
  family("torchperf_bucket_queue_delay_seconds", "gauge",
         "Time a request waited in the bucket for its call, on average.",
         [](const BucketTotals& t) {
           return t.sum.requests > 0 ? t.sum.queue_s / static_cast<double>(t.sum.requests) : 0.0;
         });
}

std::string ServerMetrics::render() const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out +=
        "# HELP torchperf_responses_total Responses sent, by HTTP status.\n"
        "# TYPE torchperf_responses_total counter\n";
    for (const auto& [status, n] : responses_)
      out += fmt::format("torchperf_responses_total{{code=\"{}\"}} {}\n", status, n);
    out += fmt::format(
        "# HELP torchperf_queue_depth Requests waiting for a batch.\n"
        "# TYPE torchperf_queue_depth gauge\ntorchperf_queue_depth {}\n",
        queue_depth_);
    render_buckets(out);
  }
  batch_size_.render(out, "torchperf_batch_size", "Requests per model call.");
  queue_s_.render(out, "torchperf_queue_seconds", "Time a request waited for its batch.");
  compute_s_.render(out, "torchperf_compute_seconds", "Time its batch took in the model.");
  total_s_.render(out, "torchperf_request_seconds", "Time from arrival to the answer.");
  return out;
}

std::map<std::size_t, std::size_t> parse_batch_size_histogram(const std::string& text) {
  static const std::regex bucket(R"re(torchperf_batch_size_bucket\{le="([0-9]+)"\} ([0-9]+))re");
  std::map<std::size_t, std::size_t> cumulative;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), bucket);
       it != std::sregex_iterator(); ++it)
    cumulative[std::stoul((*it)[1])] = std::stoul((*it)[2]);
  std::map<std::size_t, std::size_t> counts;
  std::size_t below = 0;
  for (const auto& [le, n] : cumulative) {
    counts[le] = n - std::min(n, below);
    below = n;
  }
  return counts;
}

}  // namespace torchperf
