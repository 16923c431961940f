#include "torchperf/serve/load_summary.h"

#include <gtest/gtest.h>

#include <cmath>

#include "torchperf/error.h"

namespace torchperf {
namespace {

// n requests a millisecond apart, each answered `latency(i)` after its scheduled time.
template <typename Latency>
std::vector<RequestRecord> run_of(std::size_t n, Latency latency) {
  std::vector<RequestRecord> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    r[i].scheduled_s = 1e-3 * static_cast<double>(i);
    r[i].sent_s = r[i].scheduled_s;
    r[i].done_s = r[i].scheduled_s + latency(i);
  }
  return r;
}

}  // namespace

TEST(LoadSummaryTest, RequestsOfVaryingLengthsGetTheirLatencyByQuarterOfLengthNeverSplittingOne) {
  // 100 requests of lengths 1..10 (ten each), each answered in a millisecond per token.
  auto records = run_of(100, [](std::size_t i) { return 1e-3 * static_cast<double>(1 + i % 10); });
  for (std::size_t i = 0; i < records.size(); ++i) records[i].length = 1 + static_cast<std::int64_t>(i % 10);
  const LoadSummary s = summarize_load(records, 1.0, std::nullopt);
  ASSERT_EQ(s.by_length.size(), 4u);
  EXPECT_EQ(s.by_length.front().low, 1);
  EXPECT_EQ(s.by_length.back().high, 10);
  std::size_t ok = 0;
  for (std::size_t g = 0; g < s.by_length.size(); ++g) {
    ok += s.by_length[g].ok;
    if (g > 0) {
      EXPECT_GT(s.by_length[g].low, s.by_length[g - 1].high) << "a length split in two";
    }
  }
  EXPECT_EQ(ok, 100u);
  EXPECT_LT(s.by_length.front().p50_s, s.by_length.back().p50_s);
  EXPECT_TRUE(summarize_load(run_of(10, [](std::size_t) { return 0.01; }), 1.0, std::nullopt)
                  .by_length.empty())
      << "no lengths, no table";
}

TEST(LoadSummaryTest, LatencyIsMeasuredFromTheScheduledTimeNotFromWhenItWasSent) {
  // The generator fell 40 ms behind on one request; the server answered it 10 ms after it left.
  auto records = run_of(100, [](std::size_t) { return 0.010; });
  records[50].sent_s += 0.040;
  records[50].done_s += 0.040;
  const LoadSummary s = summarize_load(records, 0.1, std::nullopt);
  EXPECT_NEAR(s.latency.back().value_s, 0.050, 0.02);  // p99.9 sees the 50 ms
  EXPECT_NEAR(s.max_send_lag_s, 0.040, 1e-12);
  EXPECT_NEAR(s.median_send_lag_s, 0, 1e-12);
}

TEST(LoadSummaryTest, ThroughputCountsOnlyAnswersAndErrorsAreCountedByKind) {
  auto records = run_of(1000, [](std::size_t) { return 0.005; });
  for (std::size_t i = 0; i < 1000; i += 10) records[i].outcome = RequestOutcome::kRejected;
  records[1].outcome = RequestOutcome::kTimeout;
  const LoadSummary s = summarize_load(records, 1.0, std::nullopt);
  EXPECT_EQ(s.requests, 1000u);
  EXPECT_EQ(s.ok, 899u);
  EXPECT_DOUBLE_EQ(s.offered_per_s, 1000);
  EXPECT_DOUBLE_EQ(s.throughput_per_s, 899);
  EXPECT_EQ(s.errors.at("rejected (503)"), 100u);
  EXPECT_EQ(s.errors.at("timeout"), 1u);
  ASSERT_EQ(s.latency.size(), 4u);
  EXPECT_DOUBLE_EQ(s.latency[2].quantile, 0.99);
  EXPECT_LE(s.latency[2].ci.low, s.latency[2].value_s);
}

TEST(LoadSummaryTest, EachKindOfFailureKeepsTheFirstMessageTheServerGave) {
  std::vector<RequestRecord> records(3);
  records[1].outcome = RequestOutcome::kClientError;
  records[1].error = "input 'input_ids': size 200 in dimension 1 is past the longest";
  records[2].outcome = RequestOutcome::kClientError;
  records[2].error = "another";
  const LoadSummary s = summarize_load(records, 1.0, std::nullopt);
  EXPECT_EQ(s.errors.at("client error (4xx)"), 2u);
  EXPECT_EQ(s.first_error.at("client error (4xx)"),
            "input 'input_ids': size 200 in dimension 1 is past the longest");
  EXPECT_EQ(to_json(s).at("first_error").at("client error (4xx)"), records[1].error);
}

TEST(LoadSummaryTest, AnObjectiveNeedsEnoughRequestsForItsClaim) {
  const auto objective = parse_latency_objective("p99=50ms");
  const auto few = summarize_load(run_of(300, [](std::size_t) { return 0.001; }), 1, objective);
  ASSERT_TRUE(few.verdict);
  EXPECT_FALSE(few.verdict->enough);
  EXPECT_FALSE(few.verdict->valid);
  EXPECT_EQ(few.verdict->needed, 459u);
  EXPECT_NE(few.verdict->reason.find("too few requests"), std::string::npos) << few.verdict->reason;
}

TEST(LoadSummaryTest, AnObjectiveIsValidOnlyWhenTheTailsUpperBoundIsWithinIt) {
  const auto objective = parse_latency_objective("p99=50ms");
  // 2% of requests take 80 ms: the p99 is over the limit.
  const auto slow = summarize_load(
      run_of(5000, [](std::size_t i) { return i % 50 == 0 ? 0.080 : 0.010; }), 5, objective);
  EXPECT_TRUE(slow.verdict->enough);
  EXPECT_FALSE(slow.verdict->valid) << slow.verdict->reason;
  // 0.2% take 80 ms: the p99 is 10 ms, and its bound too.
  const auto fast = summarize_load(
      run_of(5000, [](std::size_t i) { return i % 500 == 0 ? 0.080 : 0.010; }), 5, objective);
  EXPECT_TRUE(fast.verdict->valid) << fast.verdict->reason;
  EXPECT_NEAR(fast.verdict->upper_bound_s, 0.010, 1e-12);
}

TEST(LoadSummaryTest, FailedRequestsCountAgainstTheObjective) {
  auto records = run_of(5000, [](std::size_t) { return 0.001; });
  for (std::size_t i = 0; i < 5000; i += 40) records[i].outcome = RequestOutcome::kTimeout;  // 2.5%
  const auto s = summarize_load(records, 5, parse_latency_objective("p99=50ms"));
  EXPECT_FALSE(s.verdict->valid);
  EXPECT_TRUE(std::isinf(s.verdict->upper_bound_s));
}

TEST(LoadSummaryTest, WithLengthsTheObjectiveMustHoldForTheLongestQuarterToo) {
  // 8000 requests of lengths 1..8: the whole's p99 is 10 ms, but 2% of the longest quarter (lengths
  // 7 and 8) take 80 ms, which the whole's tail (0.5%) hides.
  const auto objective = parse_latency_objective("p99=50ms");
  auto records = run_of(8000, [](std::size_t i) { return i % 200 == 7 ? 0.080 : 0.010; });
  for (std::size_t i = 0; i < records.size(); ++i) records[i].length = 1 + static_cast<std::int64_t>(i % 8);
  const auto s = summarize_load(records, 8, objective);
  ASSERT_EQ(s.by_length.size(), 4u);
  EXPECT_FALSE(s.verdict->valid) << s.verdict->reason;
  EXPECT_NE(s.verdict->reason.find("the longest quarter, lengths 7-8"), std::string::npos)
      << s.verdict->reason;
  EXPECT_NEAR(s.verdict->upper_bound_s, 0.010, 1e-12) << "the whole alone would pass";
  EXPECT_NEAR(s.verdict->longest_quarter_bound_s, 0.080, 1e-9);
  EXPECT_TRUE(to_json(s)["objective"].contains("longest_quarter"));
  // Too few requests in the longest quarter is not enough for a claim, though the whole has them.
  auto few = run_of(1000, [](std::size_t) { return 0.010; });
  for (std::size_t i = 0; i < few.size(); ++i) few[i].length = 1 + static_cast<std::int64_t>(i % 8);
  const auto short_run = summarize_load(few, 1, objective);
  EXPECT_FALSE(short_run.verdict->enough) << short_run.verdict->reason;
  EXPECT_FALSE(short_run.verdict->valid);
}

TEST(LoadSummaryTest, ObjectivesParseTheirQuantileAndUnit) {
  const auto a = parse_latency_objective("p99.9=0.2s");
  EXPECT_DOUBLE_EQ(a.quantile, 0.999);
  EXPECT_DOUBLE_EQ(a.limit_s, 0.2);
  EXPECT_DOUBLE_EQ(parse_latency_objective("p50=800us").limit_s, 800e-6);
  for (const char* bad : {"p99", "99=50ms", "p100=1s", "p99=50", "p99=-5ms", "p99=50min", "pX=1s"})
    EXPECT_THROW(parse_latency_objective(bad), UsageError) << bad;
}

}  // namespace torchperf

namespace torchperf {

TEST(LoadSummaryTest, ALatencyIsReadWithItsUnit) {
  EXPECT_DOUBLE_EQ(parse_latency("2ms", "--max-queue-delay"), 0.002);
  EXPECT_DOUBLE_EQ(parse_latency("500us", "--max-queue-delay"), 0.0005);
  EXPECT_DOUBLE_EQ(parse_latency("0s", "--max-queue-delay"), 0.0);
  try {
    parse_latency("2", "--max-queue-delay");
    FAIL() << "read a time without a unit";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--max-queue-delay '2'"), std::string::npos);
  }
  EXPECT_THROW(parse_latency("-1ms", "--max-queue-delay"), UsageError);
}

}  // namespace torchperf
