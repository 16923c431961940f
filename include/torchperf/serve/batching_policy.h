// The dynamic batcher's rule, apart from its threads and clock: given what waits in a bucket and
// how long its oldest request has waited, run a batch now or wait. Pure, so that it is tested with
// scripted times; the server's queue calls it whenever a request arrives or a wait ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torchperf {

// TEI's --max-client-batch-size default: a client with more samples sends more requests.
inline constexpr std::int64_t kRequestSamples = 32;

struct BatchingPolicy {
  std::size_t max_batch = 8;         // requests per model call, at most
  double max_queue_delay_s = 0.002;  // how long the oldest request may wait for others
  std::size_t max_queue = 256;       // requests waiting, at most: the next gets 503 at once
  // Requests of a varying length (a --dim) wait in per-length buckets: a request of length L in
  // the first whose edge holds L (ascending edges; empty: one bucket for every length). A call is
  // formed from one bucket only, so its padding stays within the bucket's width.
  std::vector<std::int64_t> edges = {};
  // Padded tokens per call, at most (samples x the length they are padded to); 0: no budget.
  std::int64_t max_tokens = 0;
  // Samples one request may hold (its first dimension), at most: a request is run whole, so
  // nothing else bounds what one client makes one call hold (issue 63: [100000, 64] tokens took
  // 14 GiB). 0: kRequestSamples, or the model's smallest batch where that is larger.
  std::int64_t max_request_samples = 0;
  // Issue 63: what one call may hold in memory, and what the model's calls take. call_bytes
  // (serve's --max-call-memory; 0: no bound) with where it came from; queue_policy fills in the
  // fixed and per-token bytes measured at start-up (ModelSignature::call_memory).
  struct MemoryBound {
    std::int64_t call_bytes = 0;
    std::string call_bytes_from = {};  // "--max-call-memory 64M"
    double fixed_bytes = 0, bytes_per_token = 0, answer_bytes_per_token = 0;
  } memory = {};
  // The length a call whose longest request is L is padded to (the model's padding, an edge for
  // buckets); empty: L itself.
  std::function<std::int64_t(std::int64_t)> padded = nullptr;
};

// UsageError naming the setting: max_batch 0, a delay that is negative or not finite, a queue
// shorter than one batch, edges that are not positive and ascending, a negative token budget.
void validate(const BatchingPolicy& policy);

// serve's --buckets: "one" (a single bucket to `longest`), "per-length" (a bucket per length, so
// that only requests of one length share a call), or ascending edges "E1/E2/..." (commas too),
// the last not past `longest`, the --dim's longest. UsageError naming the value otherwise, and
// when there is no length that varies (longest < 1).
std::vector<std::int64_t> parse_bucket_edges(const std::string& text, std::int64_t longest);
// "32/64/512", or "per-length (1..512)" for per-length edges.
std::string describe_edges(const std::vector<std::int64_t>& edges);
// The --buckets value that gives these edges: "32/64/512", or "per-length".
std::string buckets_option(const std::vector<std::int64_t>& edges);

// What one queued request weighs: its length in the varying dimension (0 for a model without
// one) and its samples (its first dimension).
struct QueuedSize {
  std::int64_t length = 0;
  std::int64_t samples = 1;
};

struct BatchDecision {
  std::size_t take = 0;  // requests to run now (the oldest first); 0: wait
  double wait_s = 0;     // when take is 0: how long to wait before deciding again, unless a
                         // request arrives first (infinity when the queue is empty)
};

// A full batch runs at once; otherwise the queue waits for more until the oldest request has
// waited max_queue_delay, then runs what it has.
BatchDecision decide_batch(const BatchingPolicy& policy, std::size_t queued,
                           double oldest_waited_s);
// The same for one bucket whose requests (oldest first) weigh `waiting`: a batch is full when it
// holds max_batch requests or the next request would take its padded tokens past the budget.
BatchDecision decide_bucket(const BatchingPolicy& policy, const std::vector<QueuedSize>& waiting,
                            double oldest_waited_s);

// The bucket a request of this length waits in (0 without edges, or past the last edge).
std::size_t bucket_of(const BatchingPolicy& policy, std::int64_t length);
// The length a call whose longest request is `longest` is padded to.
std::int64_t padded_length(const BatchingPolicy& policy, std::int64_t longest);
// The padded tokens of the oldest `count` requests as one call.
std::int64_t padded_tokens(const BatchingPolicy& policy, const std::vector<QueuedSize>& waiting,
                           std::size_t count);

// Why a request of this size can never join a call (more samples than a request may hold, longer
// than the last edge, its padded tokens alone past the budget or past what memory allows), naming
// the limit and its flag (413 for a size, 400 for a length); nothing when it may queue.
struct Refusal {
  int status = 400;
  std::string message;
};
std::optional<Refusal> refuse_size(const BatchingPolicy& policy, const QueuedSize& size);

// The padded tokens (samples, without a length) one call may hold by memory: what fits in
// call_bytes after the fixed bytes, at least 1; 0 when there is no bound (no call_bytes, or no
// measured call).
std::int64_t memory_tokens(const BatchingPolicy& policy);
// "2.5 KiB a padded token in the call and 3.1 KiB in its request and answer, 12 B a call": the
// measured figures a bound by memory comes from (unit "padded token", or "sample").
std::string describe_figures(const BatchingPolicy::MemoryBound& memory, const std::string& unit);
// The padded tokens one call may hold: the smaller of max_tokens and memory_tokens (0: no bound).
// The queue merges, and a request alone is admitted, only within it.
std::int64_t token_limit(const BatchingPolicy& policy);

// Whether a request that arrives now may join the queue (false: answer 503 at once).
inline bool admits(const BatchingPolicy& policy, std::size_t queued) {
  return queued < policy.max_queue;
}

}  // namespace torchperf
