#include "torchperf/serve/batching_policy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "torchperf/error.h"

namespace torchperf {

TEST(BatchingPolicyTest, AFullBatchRunsAtOnce) {
  const BatchingPolicy p{8, 0.005, 64};
  EXPECT_EQ(decide_batch(p, 8, 0).take, 8u);
  EXPECT_EQ(decide_batch(p, 20, 0).take, 8u);  // the oldest eight; the rest wait their turn
}

TEST(BatchingPolicyTest, APartialBatchWaitsForTheOldestRequestsDelayThenRuns) {
  const BatchingPolicy p{8, 0.005, 64};
  const BatchDecision early = decide_batch(p, 3, 0.001);
  EXPECT_EQ(early.take, 0u);
  EXPECT_NEAR(early.wait_s, 0.004, 1e-12);
  EXPECT_EQ(decide_batch(p, 3, 0.005).take, 3u);
  EXPECT_EQ(decide_batch(p, 3, 0.050).take, 3u);
}

TEST(BatchingPolicyTest, NoDelayMeansEveryRequestRunsAsSoonAsItArrives) {
  const BatchingPolicy p{8, 0, 64};
  EXPECT_EQ(decide_batch(p, 1, 0).take, 1u);
}

TEST(BatchingPolicyTest, AnEmptyQueueWaitsForARequest) {
  const BatchDecision d = decide_batch(BatchingPolicy{}, 0, 0);
  EXPECT_EQ(d.take, 0u);
  EXPECT_TRUE(std::isinf(d.wait_s));
}

TEST(BatchingPolicyTest, AFullQueueAdmitsNoMore) {
  const BatchingPolicy p{4, 0.001, 6};
  EXPECT_TRUE(admits(p, 5));
  EXPECT_FALSE(admits(p, 6));
}

TEST(BatchingPolicyTest, ImpossibleSettingsAreUsageErrors) {
  EXPECT_THROW(validate({0, 0.001, 8}), UsageError);
  EXPECT_THROW(validate({4, -1, 8}), UsageError);
  EXPECT_THROW(validate({16, 0.001, 8}), UsageError);
  EXPECT_NO_THROW(validate({8, 0.001, 8}));
}

}  // namespace torchperf
