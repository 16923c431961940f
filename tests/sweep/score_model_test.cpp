#include "torchperf/sweep/score_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace torchperf {

TEST(ScoreModelTest, MainEffectsSeenOneAtATimePredictTheirCombination) {
  // Axis 0 doubles the score at value 1, axis 1 triples it at value 2: seen only apart.
  ScoreModel m({2, 3});
  m.fit({{0, 0}, {1, 0}, {0, 1}, {0, 2}}, {1.0, 2.0, 1.0, 3.0});
  EXPECT_GT(m.predict({1, 2}), m.predict({1, 0}));
  EXPECT_GT(m.predict({1, 2}), m.predict({0, 2}));
  EXPECT_NEAR(std::log(m.predict({1, 2})), std::log(6.0), 0.35) << m.predict({1, 2});
}

TEST(ScoreModelTest, AnInteractionSeenRepeatedlyOverturnsTheAdditiveGuess) {
  // Each knob alone hurts, together they win: the pair's cell is measured, with its neighbours.
  ScoreModel m({2, 2, 2});
  std::vector<std::vector<std::size_t>> xs;
  std::vector<double> ys;
  for (std::size_t c = 0; c < 2; ++c) {
    xs.push_back({0, 0, c});
    ys.push_back(1.0);
    xs.push_back({1, 0, c});
    ys.push_back(0.8);
    xs.push_back({0, 1, c});
    ys.push_back(0.8);
    xs.push_back({1, 1, c});
    ys.push_back(2.0);
  }
  m.fit(xs, ys);
  EXPECT_GT(m.predict({1, 1, 0}), m.predict({0, 0, 0}));
  EXPECT_LT(m.predict({1, 0, 0}), m.predict({0, 0, 0}));
}

TEST(ScoreModelTest, BeforeAnyFitEveryPointIsPredictedAlike) {
  ScoreModel m({2, 2});
  EXPECT_DOUBLE_EQ(m.predict({0, 0}), m.predict({1, 1}));
  EXPECT_THROW(m.predict({0}), std::invalid_argument);
}

}  // namespace torchperf
