#include "torchperf/serve/bucket_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "torchperf/error.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/serve/batching_policy.h"

namespace torchperf {

std::vector<std::int64_t> BucketPlan::edges() const {
  std::vector<std::int64_t> out;
  for (const auto& b : buckets) out.push_back(b.edge);
  return out;
}

std::string BucketPlan::describe() const {
  std::string out;
  for (const auto& b : buckets)
    out += fmt::format("{}{} ({:.0f}% of requests, padding {:.0f}%)", out.empty() ? "" : ", ",
                       b.edge, 100 * b.share, 100 * b.padding_share);
  return out + fmt::format("; {:.0f}% of tokens padding", 100 * padding_share);
}

BucketPlan plan_buckets(std::vector<std::int64_t> lengths, std::size_t count,
                        std::int64_t longest, std::int64_t multiple) {
  if (lengths.empty() || count == 0 || longest < 1 || multiple < 1)
    throw std::invalid_argument(
        "plan_buckets: expected lengths, a count, a longest and a multiple");
  std::sort(lengths.begin(), lengths.end());
  // Candidate edges: each length rounded up to the multiple, and the longest.
  std::vector<std::int64_t> edges;
  for (const auto l : lengths)
    edges.push_back(std::min(longest, (l + multiple - 1) / multiple * multiple));
  edges.push_back(longest);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  const std::size_t n = edges.size();
  // Per candidate edge: the requests up to it and their tokens (prefix sums over sorted lengths).
  std::vector<std::size_t> upto(n);
  std::vector<double> tokens_upto(n);
  {
    std::size_t i = 0;
    double tokens = 0;
    for (std::size_t e = 0; e < n; ++e) {
      while (i < lengths.size() && lengths[i] <= edges[e])
        tokens += static_cast<double>(lengths[i++]);
      upto[e] = i;
      tokens_upto[e] = tokens;
    }
  }
  // The padding of the requests in (edges[a], edges[b]] padded to edges[b]; a = n: from 0.
  const auto padding = [&](std::size_t a, std::size_t b) {
    const std::size_t from = a == n ? 0 : upto[a];
    const double tokens = tokens_upto[b] - (a == n ? 0.0 : tokens_upto[a]);
    return static_cast<double>(upto[b] - from) * static_cast<double>(edges[b]) - tokens;
  };
  // best[k][b]: the least padding of the requests up to edges[b] with k+1 buckets, the last
  // ending at b; from[k][b] the previous edge.
  const std::size_t k_max = std::min(count, n);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(k_max, std::vector<double>(n, inf));
  std::vector<std::vector<std::size_t>> from(k_max, std::vector<std::size_t>(n, n));
  for (std::size_t b = 0; b < n; ++b) best[0][b] = padding(n, b);
  for (std::size_t k = 1; k < k_max; ++k)
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t a = 0; a < b; ++a)
        if (const double c = best[k - 1][a] + padding(a, b); c < best[k][b]) {
          best[k][b] = c;
          from[k][b] = a;
        }
  std::size_t k = 0;
  for (std::size_t j = 1; j < k_max; ++j)
    if (best[j][n - 1] < best[k][n - 1]) k = j;
  std::vector<std::size_t> chosen;
  for (std::size_t b = n - 1;; b = from[k][b], --k) {
    chosen.push_back(b);
    if (k == 0) break;
  }
  std::reverse(chosen.begin(), chosen.end());
  BucketPlan plan;
  double padded = 0, total = 0;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const std::size_t a = i == 0 ? n : chosen[i - 1], b = chosen[i];
    const double requests = static_cast<double>(upto[b] - (a == n ? 0 : upto[a]));
    const double pad = padding(a, b), all = requests * static_cast<double>(edges[b]);
    plan.buckets.push_back({edges[b], requests / static_cast<double>(lengths.size()),
                            all > 0 ? pad / all : 0.0});
    padded += pad;
    total += all;
  }
  plan.padding_share = total > 0 ? padded / total : 0.0;
  return plan;
}

std::vector<std::int64_t> bucket_edges_option(const std::string& text,
                                              const LengthDistribution* lengths,
                                              std::string* plan) {
  if (text.rfind("plan:", 0) != 0) return parse_bucket_edges(text, lengths ? lengths->max : 0);
  const std::string k = text.substr(5);
  if (!lengths)
    throw UsageError("--buckets '" + text + "': needs a --dim, the lengths to plan from");
  if (k.empty() || k.size() > 2 || k.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(k) < 1 || std::stoi(k) > 64)
    throw UsageError("--buckets '" + text + "': expected plan:K with K buckets, 1 to 64");
  const BucketPlan planned =
      plan_buckets(lengths->draw(4096, 0), static_cast<std::size_t>(std::stoi(k)), lengths->max);
  if (plan) *plan = planned.describe();
  return planned.edges();
}

}  // namespace torchperf
