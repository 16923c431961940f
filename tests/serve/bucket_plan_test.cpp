#include "torchperf/serve/bucket_plan.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"
#include "torchperf/feed/length_distribution.h"

namespace torchperf {

TEST(BucketPlanTest, TwoClustersOfLengthsGetAnEdgeEach) {
  // Half the requests are 10-16 tokens, half 100-120: one edge at 16 and one at 120 waste least.
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 50; ++i) lengths.push_back(10 + i % 7);
  for (int i = 0; i < 50; ++i) lengths.push_back(100 + i % 21);
  const BucketPlan plan = plan_buckets(lengths, 2, 120);
  EXPECT_EQ(plan.edges(), (std::vector<std::int64_t>{16, 120}));
  EXPECT_DOUBLE_EQ(plan.buckets[0].share, 0.5);
  EXPECT_DOUBLE_EQ(plan.buckets[1].share, 0.5);
  EXPECT_LT(plan.padding_share, 0.15);
  EXPECT_NE(plan.describe().find("16 (50% of requests"), std::string::npos) << plan.describe();
}

TEST(BucketPlanTest, MoreBucketsNeverWasteMoreAndTheLastEdgeIsTheLongest) {
  const auto lengths = parse_dim_option("S=lognormal:40:0.9:4..512").distribution.draw(4096, 0);
  double before = 1;
  for (const std::size_t count : {1, 2, 4, 8}) {
    const BucketPlan plan = plan_buckets(lengths, count, 512);
    EXPECT_LE(plan.buckets.size(), count);
    EXPECT_EQ(plan.edges().back(), 512);
    EXPECT_LE(plan.padding_share, before + 1e-12) << count;
    before = plan.padding_share;
    double share = 0;
    for (const auto& b : plan.buckets) {
      share += b.share;
      if (b.edge != 512) {
        EXPECT_EQ(b.edge % 8, 0) << b.edge;
      }
    }
    EXPECT_NEAR(share, 1.0, 1e-9);
  }
  EXPECT_GT(plan_buckets(lengths, 1, 512).padding_share, 0.8) << "everything padded to 512";
  EXPECT_LT(before, 0.3) << "eight planned buckets";
}

TEST(BucketPlanTest, TheBucketsOptionPlansFromTheDimOrNamesWhatItExpected) {
  const auto d = parse_dim_option("S=lognormal:40:0.9:4..512").distribution;
  std::string plan;
  const auto edges = bucket_edges_option("plan:3", &d, &plan);
  EXPECT_EQ(edges.size(), 3u);
  EXPECT_EQ(edges.back(), 512);
  EXPECT_NE(plan.find("% of requests"), std::string::npos) << plan;
  EXPECT_EQ(bucket_edges_option("32/512", &d), (std::vector<std::int64_t>{32, 512}));
  for (const std::string bad : {"plan:0", "plan:65", "plan:x", "plan:"}) {
    try {
      bucket_edges_option(bad, &d);
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("expected plan:K"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(bucket_edges_option("plan:2", nullptr), UsageError);
}

TEST(BucketPlanTest, NoLengthsOrNoBucketsIsAProgrammingError) {
  EXPECT_THROW(plan_buckets({}, 2, 64), std::invalid_argument);
  EXPECT_THROW(plan_buckets({4}, 0, 64), std::invalid_argument);
}

}  // namespace torchperf
