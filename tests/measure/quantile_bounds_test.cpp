#include "torchperf/measure/quantile_bounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace torchperf {
namespace {

std::vector<double> ranks(std::size_t n) {  // 1, 2, ..., n: each value is its own rank
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i + 1);
  return v;
}

}  // namespace

TEST(QuantileBoundsTest, TailQuantileIntervalsComeFromExactBinomialRanks) {
  // Of 1000 samples, the number below the true p99 is Binomial(1000, 0.99): mean 990, sd 3.15.
  const Interval p99 = quantile_confidence_interval_sorted(ranks(1000), 0.99, 0.95);
  EXPECT_GE(p99.low, 982);
  EXPECT_LE(p99.low, 986);
  EXPECT_GE(p99.high, 994);
  EXPECT_LE(p99.high, 997);
  // The median's agrees with the median interval's ranks within one.
  const Interval median = quantile_confidence_interval_sorted(ranks(100), 0.5, 0.95);
  const Interval classic = median_confidence_interval_sorted(ranks(100), 0.95);
  EXPECT_NEAR(median.low, classic.low, 1);
  EXPECT_NEAR(median.high, classic.high, 1);
}

TEST(QuantileBoundsTest, AFarTailOfFewSamplesHasNoUpperEnd) {
  const Interval p999 = quantile_confidence_interval_sorted(ranks(100), 0.999, 0.95);
  EXPECT_TRUE(std::isnan(p999.high));  // nothing in 100 samples is above the p99.9 at 97.5%
  EXPECT_DOUBLE_EQ(p999.low, 99);
  EXPECT_TRUE(std::isnan(quantile_confidence_interval_sorted({}, 0.5, 0.95).low));
}

TEST(QuantileBoundsTest, AnUpperBoundOnTheP99NeedsFourHundredFiftyNineSamplesAtNinetyNinePercent) {
  EXPECT_EQ(samples_for_quantile_upper_bound(0.99, 0.99), 459u);
  EXPECT_TRUE(std::isnan(quantile_upper_bound_sorted(ranks(458), 0.99, 0.99)));
  EXPECT_DOUBLE_EQ(quantile_upper_bound_sorted(ranks(459), 0.99, 0.99), 459);  // the maximum
  // With many samples the bound sits a little above the p99's own rank.
  const double bound = quantile_upper_bound_sorted(ranks(100000), 0.99, 0.99);
  EXPECT_GT(bound, 99000);
  EXPECT_LT(bound, 99100);
  EXPECT_THROW(quantile_upper_bound_sorted(ranks(10), 1.5, 0.99), std::invalid_argument);
}

}  // namespace torchperf
