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

// Issue 62: requests of a varying length wait in buckets, a call bounded by padded tokens.
BatchingPolicy bucketed(std::int64_t max_tokens) {
  BatchingPolicy p{8, 1.0, 64};
  p.edges = {16, 64};
  p.max_tokens = max_tokens;
  return p;
}

TEST(BatchingPolicyTest, ALengthWaitsInTheFirstBucketWhoseEdgeHoldsIt) {
  const BatchingPolicy p = bucketed(0);
  EXPECT_EQ(bucket_of(p, 1), 0u);
  EXPECT_EQ(bucket_of(p, 16), 0u);
  EXPECT_EQ(bucket_of(p, 17), 1u);
  EXPECT_EQ(bucket_of(p, 64), 1u);
  EXPECT_EQ(bucket_of(BatchingPolicy{}, 500), 0u);  // no edges: one bucket
}

TEST(BatchingPolicyTest, ACallIsPaddedToItsBucketsEdgeOrByTheModelsRule) {
  BatchingPolicy p = bucketed(0);
  EXPECT_EQ(padded_tokens(p, {{40, 1}, {20, 2}}, 2), 3 * 64);
  EXPECT_EQ(padded_tokens(p, {{40, 1}, {20, 2}}, 1), 64);
  p.padded = [](std::int64_t l) { return (l + 7) / 8 * 8; };  // multiple:8
  EXPECT_EQ(padded_tokens(p, {{40, 1}, {20, 2}}, 2), 3 * 40);
  EXPECT_EQ(padded_tokens(BatchingPolicy{}, {{0, 3}, {0, 2}}, 2), 5);  // no length: samples
}

TEST(BatchingPolicyTest, ABucketIsFullWhenOneMoreSampleWouldPassTheTokenBudget) {
  // Two requests of the 64 bucket fill 128 tokens: no third fits, so it runs without waiting.
  const BatchDecision d = decide_bucket(bucketed(128), {{40, 1}, {50, 1}}, 0);
  EXPECT_EQ(d.take, 2u);
  // One of them leaves room for another: it waits the delay.
  const BatchDecision one = decide_bucket(bucketed(128), {{40, 1}}, 0.25);
  EXPECT_EQ(one.take, 0u);
  EXPECT_NEAR(one.wait_s, 0.75, 1e-12);
}

TEST(BatchingPolicyTest, MoreWaitingThanTheBudgetHoldsRunsTheOldestThatFit) {
  EXPECT_EQ(decide_bucket(bucketed(200), {{60, 1}, {30, 2}, {20, 1}}, 0).take, 2u);
  EXPECT_EQ(decide_bucket(bucketed(300), {{60, 1}, {30, 2}, {20, 1}}, 0).take, 3u);
  // Without a budget max_batch alone bounds a call.
  EXPECT_EQ(decide_bucket(bucketed(0), std::vector<QueuedSize>(9, {60, 4}), 0).take, 8u);
}

TEST(BatchingPolicyTest, ARequestPastTheLastEdgeOrOverTheBudgetAloneIsRefusedNamingTheLimit) {
  const auto past = refuse_size(bucketed(0), {65, 1});
  ASSERT_TRUE(past);
  EXPECT_EQ(past->status, 400);
  EXPECT_NE(past->message.find("length 65 is past the last bucket edge, 64"), std::string::npos)
      << past->message;
  const auto heavy = refuse_size(bucketed(128), {20, 3});
  ASSERT_TRUE(heavy);
  EXPECT_EQ(heavy->status, 413);
  EXPECT_NE(heavy->message.find("3 samples of length 20 make 192 padded tokens"),
            std::string::npos)
      << heavy->message;
  EXPECT_NE(heavy->message.find("--max-tokens 128"), std::string::npos);
  EXPECT_FALSE(refuse_size(bucketed(128), {20, 2}));
  EXPECT_FALSE(refuse_size(BatchingPolicy{}, {100000, 1}));  // no edges, no budget: the model's range
}

TEST(BatchingPolicyTest, ARequestWithMoreSamplesThanAClientMaySendIsRefusedNamingTheFlag) {
  // Issue 63: one request of [100000, 64] tokens was run whole, and took 14 GiB.
  const auto many = refuse_size(BatchingPolicy{}, {64, 100000});
  ASSERT_TRUE(many);
  EXPECT_EQ(many->status, 413);
  EXPECT_EQ(many->message,
            "the request's 100000 samples are past the server's --max-client-batch 32: send at "
            "most 32 samples a request");
  EXPECT_FALSE(refuse_size(BatchingPolicy{}, {64, 32}));
  BatchingPolicy wide;
  wide.max_request_samples = 1000;
  EXPECT_FALSE(refuse_size(wide, {64, 1000}));
  wide.max_request_samples = -1;
  EXPECT_THROW(validate(wide), UsageError);
}

// A call takes 1 KiB a padded token (768 B in the call, 256 B in its request and answer) and 4 KiB
// whatever its size, and may hold 68 KiB: 64 tokens.
BatchingPolicy memory_bound(std::int64_t max_tokens) {
  BatchingPolicy p = bucketed(max_tokens);
  p.memory = {68 << 10, "--max-call-memory 68K", 4096, 768, 256};
  return p;
}

TEST(BatchingPolicyTest, ARequestWhoseCallWouldHoldMoreMemoryThanACallMayIsRefusedWithTheFigures) {
  // Issue 63: a request within every other limit but past what memory allows, by the model's
  // own measured figures.
  EXPECT_EQ(memory_tokens(memory_bound(0)), 64);
  const auto heavy = refuse_size(memory_bound(0), {40, 2});
  ASSERT_TRUE(heavy);
  EXPECT_EQ(heavy->status, 413);
  EXPECT_EQ(heavy->message,
            "the request's 2 samples of length 40 (128 padded tokens) would hold ~132.0 KiB in "
            "one call (768 B a padded token in the call and 256 B in its request and answer, "
            "4.0 KiB a call, measured at start-up): past the 68.0 KiB a call may hold "
            "(--max-call-memory 68K), which fits 64 padded tokens; send at most 1 sample of "
            "length 40 a request");
  EXPECT_FALSE(refuse_size(memory_bound(0), {40, 1}));
  // One sample padded past what fits: no count of samples would do.
  BatchingPolicy narrow = memory_bound(0);
  narrow.memory.call_bytes = 36 << 10;  // 32 tokens
  const auto long_one = refuse_size(narrow, {40, 1});
  ASSERT_TRUE(long_one);
  EXPECT_NE(long_one->message.find("which fits 32 padded tokens; send shorter samples"),
            std::string::npos)
      << long_one->message;
  // The user's --max-tokens, when lower, is the limit named.
  const auto budget = refuse_size(memory_bound(32), {40, 1});
  ASSERT_TRUE(budget);
  EXPECT_NE(budget->message.find("--max-tokens 32"), std::string::npos) << budget->message;
  // Without a length a sample is the unit.
  BatchingPolicy samples;
  samples.memory = {10 << 10, "--max-call-memory 10K", 0, 1024, 0};
  const auto many = refuse_size(samples, {0, 11});
  ASSERT_TRUE(many);
  EXPECT_NE(many->message.find("the request's 11 samples would hold ~11.0 KiB in one call (1.0 "
                               "KiB a sample in the call"),
            std::string::npos)
      << many->message;
  EXPECT_FALSE(refuse_size(samples, {0, 10}));
}

TEST(BatchingPolicyTest, CallsMergeOnlyWithinWhatMemoryAllows) {
  // 64 tokens by memory: two requests of the 64 bucket's 40s need 128, so each runs alone.
  EXPECT_EQ(decide_bucket(memory_bound(0), {{40, 1}, {40, 1}}, 0).take, 1u);
  EXPECT_EQ(token_limit(memory_bound(0)), 64);
  EXPECT_EQ(token_limit(memory_bound(32)), 32);
  EXPECT_EQ(token_limit(memory_bound(1000)), 64);
  // No bound without a measured call or without call bytes.
  BatchingPolicy unmeasured = memory_bound(0);
  unmeasured.memory.bytes_per_token = 0;
  EXPECT_EQ(token_limit(unmeasured), 0);
  BatchingPolicy off = memory_bound(0);
  off.memory.call_bytes = 0;
  EXPECT_EQ(token_limit(off), 0);
  EXPECT_EQ(decide_bucket(off, {{40, 1}, {40, 1}}, 0).take, 0u);  // waits for more
  // A call whose fixed part alone passes the bound still admits one token: a request of one
  // sample is refused by its figures, not by a zero.
  BatchingPolicy tight = memory_bound(0);
  tight.memory.call_bytes = 1024;
  EXPECT_EQ(memory_tokens(tight), 1);
  off.memory.call_bytes = -1;
  EXPECT_THROW(validate(off), UsageError);
}

TEST(BatchingPolicyTest, EdgesOutOfOrderAndANegativeBudgetAreUsageErrors) {
  BatchingPolicy p = bucketed(-1);
  EXPECT_THROW(validate(p), UsageError);
  p = bucketed(0);
  p.edges = {64, 16};
  EXPECT_THROW(validate(p), UsageError);
  p.edges = {0, 16};
  EXPECT_THROW(validate(p), UsageError);
  EXPECT_NO_THROW(validate(bucketed(128)));
}

TEST(BatchingPolicyTest, BucketsAreGivenAsOneAsPerLengthOrAsEdgesAndBadOnesNameTheFlag) {
  EXPECT_EQ(parse_bucket_edges("one", 512), std::vector<std::int64_t>{512});
  const auto every = parse_bucket_edges("per-length", 64);
  ASSERT_EQ(every.size(), 64u);
  EXPECT_EQ(every.front(), 1);
  EXPECT_EQ(every.back(), 64);
  EXPECT_EQ(describe_edges(every), "per-length (1..64)");
  EXPECT_EQ(parse_bucket_edges("32/64/128/512", 512), (std::vector<std::int64_t>{32, 64, 128, 512}));
  EXPECT_EQ(parse_bucket_edges("32,64", 512), (std::vector<std::int64_t>{32, 64}));
  EXPECT_EQ(describe_edges({32, 64}), "32/64");
  EXPECT_EQ(buckets_option(every), "per-length") << "what serve-tune passes to serve";
  EXPECT_EQ(buckets_option({32, 64}), "32/64");
  for (const std::string bad : {"64/32", "0/8", "a/b", "32//64", "", "32/1024"}) {
    try {
      parse_bucket_edges(bad, 512);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--buckets '" + bad + "'"), std::string::npos) << e.what();
    }
  }
  try {
    parse_bucket_edges("one", 0);
    ADD_FAILURE() << "buckets without a length that varies";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a --dim"), std::string::npos) << e.what();
  }
}

}  // namespace torchperf
