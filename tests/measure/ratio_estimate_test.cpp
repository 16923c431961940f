#include "torchperf/measure/ratio_estimate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace torchperf {

TEST(RatioEstimateTest, IsTheGeometricMeanWithAStudentTIntervalOnTheLogs) {
  // logs: ln 2 ± ln 2 / 2 alternately: mean ln 2, sample sd ln2/2 * sqrt(4/3) over 4 rounds.
  const double lo = std::exp(std::log(2.0) / 2), hi = std::exp(3 * std::log(2.0) / 2);
  const RatioEstimate e = estimate_ratio({lo, hi, lo, hi});
  EXPECT_NEAR(e.ratio, 2.0, 1e-12);
  const double sd = std::log(2.0) / 2 * std::sqrt(4.0 / 3.0);
  const double half = 3.182446305284263 * sd / 2;  // t(0.975, 3) from the table
  EXPECT_NEAR(e.interval.low, 2.0 * std::exp(-half), 1e-9);
  EXPECT_NEAR(e.interval.high, 2.0 * std::exp(half), 1e-9);
  EXPECT_NEAR(e.relative_half_width, std::exp(half) - 1, 1e-9);
  EXPECT_EQ(e.rounds, 4u);
  EXPECT_DOUBLE_EQ(e.min, lo);
  EXPECT_DOUBLE_EQ(e.max, hi);
}

TEST(RatioEstimateTest, FewerThanTheMinimumRoundsGiveNoInterval) {
  const RatioEstimate e = estimate_ratio({1.1, 1.2, 1.3});
  EXPECT_GT(e.ratio, 1.1);
  EXPECT_TRUE(std::isnan(e.interval.low));
  EXPECT_TRUE(std::isnan(e.relative_half_width));
  EXPECT_EQ(verdict_of(e), Verdict::kUndetermined);
}

TEST(RatioEstimateTest, VerdictFollowsWhereTheIntervalLiesAgainstOne) {
  EXPECT_EQ(verdict_of(estimate_ratio({1.2, 1.21, 1.19, 1.2, 1.2})), Verdict::kFaster);
  EXPECT_EQ(verdict_of(estimate_ratio({0.8, 0.81, 0.79, 0.8})), Verdict::kSlower);
  EXPECT_EQ(verdict_of(estimate_ratio({0.9, 1.1, 0.95, 1.05})), Verdict::kIndistinguishable);
}

TEST(RatioEstimateTest, ScalingChangesUnitsButNotTheVerdictsShape) {
  const RatioEstimate e = scaled(estimate_ratio({2, 2, 2, 2}), 0.25);
  EXPECT_DOUBLE_EQ(e.ratio, 0.5);
  EXPECT_DOUBLE_EQ(e.interval.high, 0.5);
  EXPECT_EQ(verdict_of(e), Verdict::kSlower);
  EXPECT_THROW(scaled(e, 0), std::invalid_argument);
}

TEST(RatioEstimateTest, NonPositiveRatiosAreRefused) {
  EXPECT_THROW(estimate_ratio({1, 0, 1, 1}), std::invalid_argument);
  EXPECT_THROW(estimate_ratio({1, NAN, 1, 1}), std::invalid_argument);
}

TEST(RatioEstimateTest, IntervalCoversTheTrueRatioAboutNinetyFivePercentOfTheTime) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.05);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> ratios;
    for (int i = 0; i < 8; ++i) ratios.push_back(1.3 * noise(rng));
    const RatioEstimate e = estimate_ratio(ratios);
    if (e.interval.low <= 1.3 && 1.3 <= e.interval.high) ++covered;
  }
  EXPECT_NEAR(covered / static_cast<double>(trials), 0.95, 0.015);
}

TEST(RatioEstimateTest, VerdictNamesRoundTrip) {
  for (Verdict v :
       {Verdict::kFaster, Verdict::kSlower, Verdict::kIndistinguishable, Verdict::kUndetermined})
    EXPECT_EQ(verdict_from_string(to_string(v)), v);
  EXPECT_THROW(verdict_from_string("quicker"), std::invalid_argument);
}

}  // namespace torchperf
