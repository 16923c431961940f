#include "torchperf/measure/statistics.h"

#include <gtest/gtest.h>

#include <random>

namespace torchperf {

TEST(StatisticsTest, QuantilesInterpolateBetweenSortedValues) {
  const std::vector<double> v{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1.0), 4);
}

TEST(StatisticsTest, NormalQuantileMatchesTheTextbookValue) {
  EXPECT_NEAR(normal_two_sided_quantile(0.95), 1.959964, 1e-5);
  EXPECT_NEAR(normal_two_sided_quantile(0.99), 2.575829, 1e-5);
}

TEST(StatisticsTest, SmallSampleMedianIntervalUsesExactBinomialRanks) {
  // n = 10: P(X <= 1) = 11/1024 <= 0.025 < P(X <= 2), so the interval is [x(2), x(9)].
  std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const Interval ci = median_confidence_interval_sorted(v, 0.95);
  EXPECT_DOUBLE_EQ(ci.low, 2);
  EXPECT_DOUBLE_EQ(ci.high, 9);
}

TEST(StatisticsTest, TooFewSamplesHaveNoInterval) {
  // With 5 samples even [min, max] covers the median only 1 - 2/32 = 93.75% of the time.
  std::vector<double> v{1, 2, 3, 4, 5};
  const Interval ci = median_confidence_interval_sorted(v, 0.95);
  EXPECT_TRUE(std::isnan(ci.low));
  EXPECT_TRUE(std::isnan(ci.high));
  EXPECT_TRUE(std::isnan(summarize({7}).median_ci_relative));
  // Six samples are the fewest with one: [x(1), x(6)].
  const Interval six = median_confidence_interval_sorted({1, 2, 3, 4, 5, 6}, 0.95);
  EXPECT_DOUBLE_EQ(six.low, 1);
  EXPECT_DOUBLE_EQ(six.high, 6);
}

TEST(StatisticsTest, MedianIntervalCoversTheTrueMedianAboutNinetyFivePercentOfTheTime) {
  std::mt19937 rng(42);
  std::exponential_distribution<double> dist(1.0);  // skewed, true median ln 2
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> v(60);
    for (auto& x : v) x = dist(rng);
    const Summary s = summarize(v);
    if (s.median_ci.low <= std::log(2.0) && std::log(2.0) <= s.median_ci.high) ++covered;
  }
  const double coverage = static_cast<double>(covered) / trials;
  EXPECT_GT(coverage, 0.93);
  EXPECT_LT(coverage, 0.99);
}

TEST(StatisticsTest, SummaryReportsSpreadAndRelativeInterval) {
  const Summary s = summarize({10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10});
  EXPECT_DOUBLE_EQ(s.median, 10);
  EXPECT_DOUBLE_EQ(s.cv, 0);
  EXPECT_DOUBLE_EQ(s.median_ci_relative, 0);
  const Summary t = summarize({9, 9, 9, 11, 11, 11});
  EXPECT_DOUBLE_EQ(t.mean, 10);
  EXPECT_NEAR(t.stddev, std::sqrt(1.2), 1e-12);
  EXPECT_NEAR(t.median_ci_relative, 0.1, 1e-12);  // [x(1), x(6)] = [9, 11] around 10
}

TEST(StatisticsTest, EmptyInputGivesAnEmptySummary) { EXPECT_EQ(summarize({}).count, 0u); }

}  // namespace torchperf

TEST(StatisticsTest, StudentTQuantileMatchesTheTableAtEveryDegreeOfFreedom) {
  // Textbook 97.5% quantiles of Student's t.
  const std::vector<std::pair<double, double>> table = {
      {1, 12.706}, {2, 4.303}, {3, 3.182}, {5, 2.571}, {10, 2.228}, {30, 2.042}, {120, 1.980}};
  for (const auto& [df, t] : table)
    EXPECT_NEAR(torchperf::student_t_two_sided_quantile(0.95, df), t, 0.01 * t) << "df " << df;
  EXPECT_THROW(torchperf::student_t_two_sided_quantile(0.95, 0), std::invalid_argument);
}
