#include "torchperf/serve/batching_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "torchperf/error.h"
#include "torchperf/report/table_writer.h"

namespace torchperf {

std::string describe_edges(const std::vector<std::int64_t>& edges) {
  bool every_length = edges.size() > 2;
  for (std::size_t i = 0; i < edges.size() && every_length; ++i)
    every_length = edges[i] == static_cast<std::int64_t>(i + 1);
  if (every_length) return fmt::format("per-length (1..{})", edges.back());
  std::string out;
  for (const auto e : edges) out += (out.empty() ? "" : "/") + std::to_string(e);
  return out;
}

std::string buckets_option(const std::vector<std::int64_t>& edges) {
  const std::string described = describe_edges(edges);
  if (described.rfind("per-length", 0) == 0) return "per-length";
  return described;
}

std::vector<std::int64_t> parse_bucket_edges(const std::string& text, std::int64_t longest) {
  const auto fail = [&](const std::string& why) {
    throw UsageError(fmt::format("--buckets '{}': {}; expected one, per-length, plan:K, or edges "
                                 "E1/E2/... in ascending order (e.g. 32/64/128/512)",
                                 text, why));
  };
  if (longest < 1) fail("needs a --dim, the length that varies");
  if (text == "one") return {longest};
  if (text == "per-length") {
    std::vector<std::int64_t> every(static_cast<std::size_t>(longest));
    for (std::int64_t l = 1; l <= longest; ++l) every[static_cast<std::size_t>(l - 1)] = l;
    return every;
  }
  std::vector<std::int64_t> edges;
  std::string part;
  const auto take = [&] {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 12)
      fail("'" + part + "' is not a length");
    edges.push_back(std::stoll(part));
    part.clear();
  };
  for (const char c : text) {
    if (c == '/' || c == ',')
      take();
    else
      part += c;
  }
  take();
  for (std::size_t i = 0; i < edges.size(); ++i)
    if (edges[i] < 1 || (i > 0 && edges[i] <= edges[i - 1])) fail("not positive and ascending");
  if (edges.back() > longest)
    fail(fmt::format("the last edge is past the --dim's longest, {}", longest));
  return edges;
}

void validate(const BatchingPolicy& policy) {
  if (policy.max_batch == 0) throw UsageError("--max-batch 0: expected at least 1");
  if (!(std::isfinite(policy.max_queue_delay_s) && policy.max_queue_delay_s >= 0))
    throw UsageError(fmt::format("--max-queue-delay {} s: expected a time of 0 or more",
                                 policy.max_queue_delay_s));
  if (policy.max_queue < policy.max_batch)
    throw UsageError(fmt::format("--max-queue {}: expected at least --max-batch ({})", policy.max_queue,
                                 policy.max_batch));
  if (policy.max_tokens < 0)
    throw UsageError(fmt::format("--max-tokens {}: expected 0 (no budget) or more",
                                 policy.max_tokens));
  if (policy.memory.call_bytes < 0)
    throw UsageError(fmt::format("--max-call-memory {} bytes: expected 0 (no bound) or more",
                                 policy.memory.call_bytes));
  if (policy.max_request_samples < 0)
    throw UsageError(fmt::format("--max-client-batch {}: expected at least 1 sample a request",
                                 policy.max_request_samples));
  for (std::size_t i = 0; i < policy.edges.size(); ++i)
    if (policy.edges[i] < 1 || (i > 0 && policy.edges[i] <= policy.edges[i - 1]))
      throw UsageError(fmt::format("bucket edges {}: expected positive lengths in ascending order",
                                   describe_edges(policy.edges)));
}

BatchDecision decide_batch(const BatchingPolicy& policy, std::size_t queued,
                           double oldest_waited_s) {
  return decide_bucket(policy, std::vector<QueuedSize>(queued), oldest_waited_s);
}

std::size_t bucket_of(const BatchingPolicy& policy, std::int64_t length) {
  const auto& e = policy.edges;
  const auto at = std::lower_bound(e.begin(), e.end(), length);
  return at == e.end() ? 0 : static_cast<std::size_t>(at - e.begin());
}

std::int64_t padded_length(const BatchingPolicy& policy, std::int64_t longest) {
  if (policy.padded) return policy.padded(longest);
  const auto& e = policy.edges;
  const auto at = std::lower_bound(e.begin(), e.end(), longest);
  return at == e.end() ? longest : *at;
}

std::int64_t padded_tokens(const BatchingPolicy& policy, const std::vector<QueuedSize>& waiting,
                           std::size_t count) {
  std::int64_t longest = 0, samples = 0;
  for (std::size_t i = 0; i < count && i < waiting.size(); ++i) {
    longest = std::max(longest, waiting[i].length);
    samples += waiting[i].samples;
  }
  // A model without a varying length counts samples.
  return samples * (longest > 0 ? padded_length(policy, longest) : 1);
}

std::int64_t memory_tokens(const BatchingPolicy& policy) {
  const auto& m = policy.memory;
  if (m.call_bytes <= 0 || !(m.bytes_per_token > 0)) return 0;
  const double room = (static_cast<double>(m.call_bytes) - m.fixed_bytes) /
                      (m.bytes_per_token + m.answer_bytes_per_token);
  return static_cast<std::int64_t>(std::clamp(std::floor(room), 1.0, 1e15));
}

std::int64_t token_limit(const BatchingPolicy& policy) {
  const std::int64_t memory = memory_tokens(policy);
  if (policy.max_tokens == 0 || memory == 0) return std::max(policy.max_tokens, memory);
  return std::min(policy.max_tokens, memory);
}

BatchDecision decide_bucket(const BatchingPolicy& policy, const std::vector<QueuedSize>& waiting,
                            double oldest_waited_s) {
  if (waiting.empty()) return {0, std::numeric_limits<double>::infinity()};
  const std::size_t most = std::min(waiting.size(), policy.max_batch);
  const std::int64_t limit = token_limit(policy);
  const auto fits = [&](std::size_t k) {
    return limit == 0 || padded_tokens(policy, waiting, k) <= limit;
  };
  std::size_t take = 1;  // a request alone always runs (refuse_size keeps out one that cannot)
  while (take < most && fits(take + 1)) ++take;
  // Full: more wait than fit, max_batch reached, or not even one more sample of no greater
  // length would fit the budget.
  bool full = take < waiting.size() || take == policy.max_batch;
  if (!full && limit > 0) {
    std::vector<QueuedSize> one_more(waiting.begin(), waiting.begin() + take);
    one_more.push_back({0, 1});
    full = padded_tokens(policy, one_more, one_more.size()) > limit;
  }
  if (full || oldest_waited_s >= policy.max_queue_delay_s) return {take, 0};
  return {0, policy.max_queue_delay_s - oldest_waited_s};
}

std::string describe_figures(const BatchingPolicy::MemoryBound& m, const std::string& unit) {
  const auto bytes = [](double b) { return format_bytes(static_cast<std::int64_t>(b)); };
  return fmt::format("{} a {} in the call and {} in its request and answer, {} a call",
                     bytes(m.bytes_per_token), unit, bytes(m.answer_bytes_per_token),
                     bytes(m.fixed_bytes));
}

namespace {

// A request whose call alone would hold more than a call may: the figures behind the bound.
std::optional<Refusal> refuse_for_memory(const BatchingPolicy& policy, const QueuedSize& size) {
  const std::int64_t most = memory_tokens(policy);
  const std::int64_t tokens = padded_tokens(policy, {size}, 1);
  if (most == 0 || tokens <= most) return std::nullopt;
  const auto& m = policy.memory;
  const bool long_ = size.length > 0;
  const std::string unit = long_ ? "padded token" : "sample";
  const std::int64_t fit = long_ ? most / padded_length(policy, size.length) : most;
  const double needs = m.fixed_bytes + (m.bytes_per_token + m.answer_bytes_per_token) *
                                          static_cast<double>(tokens);
  const std::string advice =
      fit == 0 ? "send shorter samples"
               : fmt::format("send at most {} sample{}{} a request", fit, fit == 1 ? "" : "s",
                             long_ ? fmt::format(" of length {}", size.length) : std::string());
  return Refusal{
      413, fmt::format("the request's {} sample{}{}{} would hold ~{} in one call ({}, measured "
                       "at start-up): past the {} a call may hold ({}), which fits {} {}s; {}",
                       size.samples, size.samples == 1 ? "" : "s",
                       long_ ? fmt::format(" of length {}", size.length) : std::string(),
                       long_ ? fmt::format(" ({} padded tokens)", tokens) : std::string(),
                       format_bytes(static_cast<std::int64_t>(needs)), describe_figures(m, unit),
                       format_bytes(m.call_bytes), m.call_bytes_from, most, unit, advice)};
}

}  // namespace

std::optional<Refusal> refuse_size(const BatchingPolicy& policy, const QueuedSize& size) {
  const std::int64_t most =
      policy.max_request_samples > 0 ? policy.max_request_samples : kRequestSamples;
  if (size.samples > most)
    return Refusal{413, fmt::format("the request's {} samples are past the server's "
                                    "--max-client-batch {}: send at most {} samples a request",
                                    size.samples, most, most)};
  if (!policy.edges.empty() && size.length > policy.edges.back())
    return Refusal{400, fmt::format("the request's length {} is past the last bucket edge, {} "
                                    "(the queue's buckets: {}): send {} tokens at most",
                                    size.length, policy.edges.back(),
                                    describe_edges(policy.edges), policy.edges.back())};
  if (policy.max_tokens > 0) {
    const std::int64_t tokens = padded_tokens(policy, {size}, 1);
    if (tokens > policy.max_tokens)
      return Refusal{413, fmt::format("the request's {} sample{}{} make {} {} for one call, past "
                                      "the server's --max-tokens {}: send fewer samples",
                                      size.samples, size.samples == 1 ? "" : "s",
                                      size.length > 0 ? fmt::format(" of length {}", size.length)
                                                      : std::string(),
                                      tokens, size.length > 0 ? "padded tokens" : "samples",
                                      policy.max_tokens)};
  }
  return refuse_for_memory(policy, size);
}

}  // namespace torchperf
