// Bucket edges planned from the traffic (issue 62): given the lengths requests come in (drawn
// from a --dim, or recorded), the edges that waste the fewest padded tokens for a number of
// buckets, and the share of the traffic each covers, so that a plan says what it chose and why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace torchperf {

struct PlannedBucket {
  std::int64_t edge = 0;
  double share = 0;          // of the requests, those whose length falls in this bucket
  double padding_share = 0;  // of this bucket's tokens padded to its edge, the padding
};

struct BucketPlan {
  std::vector<PlannedBucket> buckets;  // ascending edges, the last the longest length
  double padding_share = 0;            // of every token padded to its edge, the padding
  std::vector<std::int64_t> edges() const;
  // "40 (52% of requests, padding 43%), 104 (...), ...; 39% of tokens padding"
  std::string describe() const;
};

// The edges, at most `count` and each a multiple of `multiple` (or the longest), that minimise
// the padded tokens when each request is padded to its bucket's edge (exactly, by dynamic
// programming over the candidate edges). `lengths` are the traffic's, each within 1..longest.
BucketPlan plan_buckets(std::vector<std::int64_t> lengths, std::size_t count,
                        std::int64_t longest, std::int64_t multiple = 8);

struct LengthDistribution;

// serve's and serve-tune's --buckets: "plan:K" plans K buckets from 4,096 lengths drawn from the
// distribution (its description into `plan`); anything else as parse_bucket_edges takes it.
// UsageError naming the value for a K that is not 1..64, and for any value without lengths.
std::vector<std::int64_t> bucket_edges_option(const std::string& text,
                                              const LengthDistribution* lengths,
                                              std::string* plan = nullptr);

}  // namespace torchperf
