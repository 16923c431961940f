#include "torchperf/serve/batch_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "torchperf/error.h"

namespace torchperf {

TEST(BatchQueueTest, QueuedRequestsRunInFullBatchesOldestFirst) {
  ManualTimeSource clock;
  BatchQueue<int> q({4, 1.0, 16}, clock);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q.push(i));
  EXPECT_EQ(q.next_batch(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(q.next_batch(), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(q.size(), 2u);
}

TEST(BatchQueueTest, APartialBatchRunsOnceTheOldestHasWaitedTheDelay) {
  ManualTimeSource clock;
  BatchQueue<int> q({8, 0.005, 16}, clock);
  q.push(1);
  clock.advance(std::chrono::milliseconds(3));
  q.push(2);
  clock.advance(std::chrono::milliseconds(2));  // the first has waited 5 ms
  EXPECT_EQ(q.next_batch(), (std::vector<int>{1, 2}));
}

TEST(BatchQueueTest, AFullQueueRefusesAtOnce) {
  ManualTimeSource clock;
  BatchQueue<int> q({2, 1.0, 3}, clock);
  EXPECT_TRUE(q.push(1));
  EXPECT_TRUE(q.push(2));
  EXPECT_TRUE(q.push(3));
  EXPECT_FALSE(q.push(4));
  EXPECT_EQ(q.size(), 3u);
}

TEST(BatchQueueTest, ClosingDrainsWhatIsQueuedWithoutWaitingThenEnds) {
  ManualTimeSource clock;  // never advances: only closing can release a partial batch
  BatchQueue<int> q({4, 3600, 16}, clock);
  for (int i = 0; i < 6; ++i) q.push(i);
  q.close();
  EXPECT_FALSE(q.push(99));
  EXPECT_EQ(q.next_batch(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(q.next_batch(), (std::vector<int>{4, 5}));
  EXPECT_TRUE(q.next_batch().empty());
}

TEST(BatchQueueTest, InstancesWaitingOnAnEmptyQueueTakeEveryJobOnceAndStopWhenClosed) {
  ManualTimeSource clock;
  BatchQueue<int> q({3, 0, 64}, clock);
  std::vector<int> seen[2];
  std::vector<std::thread> instances;
  for (auto& mine : seen)
    instances.emplace_back([&q, &mine] {
      for (auto batch = q.next_batch(); !batch.empty(); batch = q.next_batch())
        mine.insert(mine.end(), batch.begin(), batch.end());
    });
  for (int i = 0; i < 50; ++i)
    while (!q.push(i)) std::this_thread::yield();
  q.close();
  for (auto& t : instances) t.join();
  std::vector<int> all = seen[0];
  all.insert(all.end(), seen[1].begin(), seen[1].end());
  std::sort(all.begin(), all.end());
  std::vector<int> expected(50);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
}

TEST(BatchQueueTest, AnImpossiblePolicyIsRefused) {
  ManualTimeSource clock;
  EXPECT_THROW((BatchQueue<int>({0, 0.001, 8}, clock)), UsageError);
}

BatchingPolicy bucketed(std::size_t max_batch, double delay_s, std::vector<std::int64_t> edges,
                        std::int64_t max_tokens = 0) {
  BatchingPolicy p{max_batch, delay_s, 16};
  p.edges = std::move(edges);
  p.max_tokens = max_tokens;
  return p;
}

TEST(BatchQueueTest, ACallIsFormedFromOneLengthBucketAndSaysWhichBucket) {
  ManualTimeSource clock;
  BatchQueue<int> q(bucketed(2, 1.0, {16, 64}), clock);
  q.push(1, {10, 1});
  q.push(2, {40, 1});
  q.push(3, {12, 1});  // fills the short bucket: it runs at once, the long one's request waits
  std::size_t bucket = 99;
  EXPECT_EQ(q.next_batch(&bucket), (std::vector<int>{1, 3}));
  EXPECT_EQ(bucket, 0u);
  EXPECT_EQ(q.size(), 1u);
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(q.next_batch(&bucket), (std::vector<int>{2}));
  EXPECT_EQ(bucket, 1u);
}

TEST(BatchQueueTest, OfTwoDueBucketsTheOneWhoseOldestArrivedFirstRuns) {
  ManualTimeSource clock;
  BatchQueue<int> q(bucketed(4, 0.005, {16, 64}), clock);
  q.push(1, {40, 1});
  clock.advance(std::chrono::milliseconds(1));
  q.push(2, {8, 1});
  clock.advance(std::chrono::milliseconds(10));  // both have waited past the delay
  EXPECT_EQ(q.next_batch(), (std::vector<int>{1}));
  EXPECT_EQ(q.next_batch(), (std::vector<int>{2}));
}

TEST(BatchQueueTest, ATokenBudgetCutsABucketsCallShortOfMaxBatch) {
  ManualTimeSource clock;
  BatchQueue<int> q(bucketed(8, 1.0, {64}, 128), clock);  // 128 tokens: two requests of the 64 bucket
  for (int i = 0; i < 5; ++i) q.push(i, {30, 1});
  EXPECT_EQ(q.next_batch(), (std::vector<int>{0, 1}));
  EXPECT_EQ(q.next_batch(), (std::vector<int>{2, 3}));
  EXPECT_EQ(q.size(), 1u);
}

}  // namespace torchperf
