#include "torchperf/serve/arrivals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "torchperf/error.h"

namespace torchperf {

TEST(ArrivalsTest, PoissonArrivalsHaveTheRateAndExponentialGaps) {
  const auto t = schedule_arrivals({ArrivalProcess::kPoisson, 200, 50, 7});
  // 10000 expected, standard deviation 100.
  EXPECT_NEAR(static_cast<double>(t.size()), 10000, 400);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  EXPECT_GE(t.front(), 0);
  EXPECT_LT(t.back(), 50);
  std::vector<double> gaps(t.size());
  std::adjacent_difference(t.begin(), t.end(), gaps.begin());
  gaps.erase(gaps.begin());
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / gaps.size();
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= gaps.size() - 1;
  EXPECT_NEAR(mean, 1.0 / 200, 0.0002);
  EXPECT_NEAR(std::sqrt(var) / mean, 1.0, 0.05);  // an exponential's CV is 1
}

TEST(ArrivalsTest, TheSameSeedGivesTheSameScheduleAndAnotherSeedAnother) {
  const ArrivalPlan plan{ArrivalProcess::kPoisson, 50, 2, 1};
  EXPECT_EQ(schedule_arrivals(plan), schedule_arrivals(plan));
  ArrivalPlan other = plan;
  other.seed = 2;
  EXPECT_NE(schedule_arrivals(plan), schedule_arrivals(other));
}

TEST(ArrivalsTest, ConstantArrivalsAreEvenlySpacedFromZero) {
  const auto t = schedule_arrivals({ArrivalProcess::kConstant, 4, 1, 0});
  EXPECT_EQ(t, (std::vector<double>{0, 0.25, 0.5, 0.75}));
}

TEST(ArrivalsTest, ABadRateDurationOrProcessIsAUsageErrorNamingIt) {
  EXPECT_THROW(schedule_arrivals({ArrivalProcess::kPoisson, 0, 1, 0}), UsageError);
  EXPECT_THROW(schedule_arrivals({ArrivalProcess::kPoisson, 10, -1, 0}), UsageError);
  EXPECT_THROW(
      schedule_arrivals({ArrivalProcess::kPoisson, std::numeric_limits<double>::infinity(), 1, 0}),
      UsageError);
  try {
    schedule_arrivals({ArrivalProcess::kConstant, 1e6, 3600, 0});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("more than the"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_arrival_process("constant"), ArrivalProcess::kConstant);
  EXPECT_THROW(parse_arrival_process("bursty"), UsageError);
}

}  // namespace torchperf
