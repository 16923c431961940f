#include "torchperf/sweep/tune_budget.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace torchperf {

namespace {

using std::chrono::seconds;

// Points 0 and 1: point 1 runs in Python and compiles for 30 s.
class TwoPoints final : public PointPrices {
 public:
  bool in_python(std::size_t point) const override { return point == 1; }
  double compile_estimate_s(std::size_t point, bool) const override { return point == 1 ? 30 : 0; }
};

BudgetSettings settings(double budget_s) {
  BudgetSettings s;
  s.budget_s = budget_s;
  s.full_time_s = 2;
  s.leaders = 3;
  return s;
}

}  // namespace

TEST(TuneBudgetTest, WhatRemainsIsTheBudgetLessTheTimeSpentAndTheConfirmationsReserve) {
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(600));
  // Four pairs (two leaders against the best, the baseline, careful) of at least 8 point times
  // and two start-ups each: 4 * (16 + 4) s before anything is measured.
  EXPECT_DOUBLE_EQ(budget.confirmation_reserve_s(), 80);
  EXPECT_DOUBLE_EQ(budget.remaining_s(), 520);
  clock.advance(seconds(100));
  EXPECT_DOUBLE_EQ(budget.elapsed_s(), 100);
  EXPECT_DOUBLE_EQ(budget.wall_left_s(), 500);
  EXPECT_DOUBLE_EQ(budget.remaining_s(), 420);
  EXPECT_DOUBLE_EQ(budget.remaining_s(20), 400) << "what the points still out will take";
}

TEST(TuneBudgetTest, AProgramsBaselineIsItsCarefulConfigurationAndNoPairOfItsOwn) {
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(600));
  budget.set_distinct_baseline(false);
  EXPECT_DOUBLE_EQ(budget.confirmation_reserve_s(), 60) << "three pairs of 20 s";
}

TEST(TuneBudgetTest, ASpaceOfOnePointHoldsBackNoPairForLeadersItCannotHave) {
  // Issue 63: a one-point space held back 60 s of a 2-minute budget.
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(600));
  budget.set_space_points(1);
  EXPECT_DOUBLE_EQ(budget.confirmation_reserve_s(), 40) << "the baseline and careful pairs alone";
  budget.set_space_points(2);
  EXPECT_DOUBLE_EQ(budget.confirmation_reserve_s(), 60) << "one leader against the best";
}

TEST(TuneBudgetTest, AShortBudgetHoldsBackAtMostHalfForTheConfirmationSoThatItMeasures) {
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(60));
  EXPECT_DOUBLE_EQ(budget.confirmation_reserve_s(), 80) << "what confirming would need";
  EXPECT_DOUBLE_EQ(budget.held_back_s(), 30);
  EXPECT_DOUBLE_EQ(budget.remaining_s(), 30) << "half the minute measures points";
  EXPECT_DOUBLE_EQ(budget.pair_estimate_s(), 20);
}

TEST(TuneBudgetTest, AClustersNodesBuyNodeSecondsAndNoBudgetIsUnlimited) {
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(600));
  std::size_t nodes = 3;
  budget.set_slots([&] { return nodes; });
  EXPECT_DOUBLE_EQ(budget.remaining_s(), 520 * 3);
  nodes = 2;  // one lost
  EXPECT_DOUBLE_EQ(budget.remaining_s(), 520 * 2);
  TuneBudget unlimited(clock, settings(0));
  EXPECT_FALSE(unlimited.limited());
  EXPECT_TRUE(std::isinf(unlimited.remaining_s()));
  EXPECT_TRUE(std::isinf(unlimited.view().remaining_s));
}

TEST(TuneBudgetTest, APointIsPricedFromItsWorkerKindsWallsAndItsCompile) {
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(600));
  const TwoPoints prices;
  budget.set_prices(&prices);
  budget.set_brief_time_s(0.5);
  // Before any point: twice the time plus a start-up; the Python point an interpreter more and
  // its compile.
  EXPECT_DOUBLE_EQ(budget.point_cost_s(0, true), 2 * 0.5 + 2);
  EXPECT_DOUBLE_EQ(budget.point_cost_s(1, true), 2 * 0.5 + 2 + 5 + 30);
  budget.add_point(true, false, true, 3);
  budget.add_point(true, true, true, 9);
  budget.add_point(true, false, false, 1);
  // The median of the brief walls; the Python point its own.
  EXPECT_DOUBLE_EQ(budget.point_cost_s(0, true), 3);
  EXPECT_DOUBLE_EQ(budget.point_cost_s(1, true), 9 + 30);
  // A full point not seen yet: a brief one that started its worker, plus the longer caps.
  EXPECT_DOUBLE_EQ(budget.point_estimate_s(false), 3 + 2 * (2 - 0.5));
  const BudgetView view = budget.view();
  EXPECT_DOUBLE_EQ(view.cost(1, true), 39);
}

TEST(TuneBudgetTest, TheStartUpIsWhatTheDescribeAndReferenceJobsTook) {
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(600));
  EXPECT_DOUBLE_EQ(budget.startup_s(), 2);
  budget.add_startup(8);
  budget.add_startup(6);
  budget.add_startup(30);
  EXPECT_DOUBLE_EQ(budget.startup_s(), 8);
}

TEST(TuneBudgetTest, APairOpensItsSidesAsThePointsOpenedThemNotAsTheReferenceJobStarted) {
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(600));
  budget.add_startup(6);  // a stream's reference job computes its outputs over the lengths
  EXPECT_DOUBLE_EQ(budget.pair_estimate_s(), 16 + 2 * 6);
  budget.add_overhead(1);
  budget.add_overhead(1.5);
  budget.add_overhead(40);  // one point's fresh worker that compiled
  budget.add_point(false, false, false, 5);  // a full point, so two of them are not the bound
  EXPECT_DOUBLE_EQ(budget.pair_estimate_s(), 16 + 2 * 1.5);
}

TEST(TuneBudgetTest, TheEtaNeverGoesPastTheBudget) {
  ManualTimeSource clock;
  TuneBudget budget(clock, settings(100));
  EXPECT_DOUBLE_EQ(budget.eta_s(1000, false), 100);
  clock.advance(seconds(90));
  EXPECT_DOUBLE_EQ(budget.eta_s(1000, false), 10);
  TuneBudget unlimited(clock, settings(0));
  EXPECT_DOUBLE_EQ(unlimited.eta_s(10, false), 10 * (2 * 2 + 2) + unlimited.confirmation_reserve_s());
}

TEST(TuneBudgetTest, ATightBudgetMeasuresBrieflyRatherThanLeaveTheScreenHalfDone) {
  ManualTimeSource clock;
  TuneBudget roomy(clock, settings(3600));
  EXPECT_DOUBLE_EQ(roomy.choose_brief_time_s(20, 4), 0.5) << "a quarter of the full time";
  TuneBudget tight(clock, settings(150));
  const double brief = tight.choose_brief_time_s(20, 4);
  EXPECT_LT(brief, 0.5);
  EXPECT_GE(brief, 0.1);
  TuneBudget hopeless(clock, settings(90));
  EXPECT_DOUBLE_EQ(hopeless.choose_brief_time_s(20, 4), 0.5)
      << "where start-up alone does not fit, a shorter time would only rank on noise";
}

TEST(TuneBudgetTest, TheMedianIgnoresOneHang) {
  EXPECT_DOUBLE_EQ(median_of({10, 10, 120}), 10);
  EXPECT_DOUBLE_EQ(median_of({}), 0);
}

}  // namespace torchperf
