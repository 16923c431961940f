#include "torchperf/analysis/pareto.h"

#include <gtest/gtest.h>

#include <cmath>

namespace torchperf {
namespace {

TEST(ParetoTest, TheFrontHoldsThePointsNoOtherBeatsOnBothAxes) {
  // x: latency (lower is better), y: throughput (higher is better).
  const std::vector<ParetoInput> points = {{1, 10}, {2, 30}, {3, 20}, {4, 40}, {2.5, 30}, {5, 35}};
  const auto front = pareto_front(points, false, true);
  EXPECT_EQ(front, (std::vector<std::size_t>{0, 1, 3}));
}

TEST(ParetoTest, BothAxesMaximisedAndMissingValuesSkipped) {
  const std::vector<ParetoInput> points = {{1, 5}, {NAN, 100}, {3, 1}, {2, 2}, {1, 5}, {1.5, 1}};
  const auto front = pareto_front(points, true, true);
  EXPECT_EQ(front, (std::vector<std::size_t>{0, 3, 2}));  // by x; the duplicate kept once
}

TEST(ParetoTest, AnEmptyInputHasAnEmptyFront) {
  EXPECT_TRUE(pareto_front({}, false, true).empty());
}

}  // namespace
}  // namespace torchperf
