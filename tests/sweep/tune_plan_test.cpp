#include "torchperf/sweep/tune_plan.h"

#include <gtest/gtest.h>

namespace torchperf {

namespace {

PlanInputs smart_space() {
  PlanInputs in;
  in.search = SearchKind::kSmart;
  in.total = 60;
  in.origin_screen = 8;
  in.axes = 6;
  in.finalists = 4;
  in.full_time_s = 2;
  return in;
}

BudgetSettings with_budget(double budget_s) {
  BudgetSettings s;
  s.budget_s = budget_s;
  s.full_time_s = 2;
  s.leaders = 3;
  return s;
}

}  // namespace

TEST(TunePlanTest, AmpleBudgetPlansTheScreensTheGuessesAndTheFinals) {
  ManualTimeSource clock;
  TuneBudget budget(clock, with_budget(3600));
  const TunePlan plan = make_plan(smart_space(), budget);
  EXPECT_FALSE(plan.budget_too_small);
  EXPECT_EQ(plan.points, 16u + 6 + 4);
  EXPECT_NE(plan.summary.find("smart search over 60 points"), std::string::npos) << plan.summary;
  EXPECT_NE(plan.summary.find("within the budget of 60 min"), std::string::npos) << plan.summary;
  EXPECT_GT(plan.estimated_s, budget.confirmation_reserve_s());
}

TEST(TunePlanTest, ABudgetTooSmallToScreenSaysSoAndHowManyPointsFit) {
  ManualTimeSource clock;
  TuneBudget budget(clock, with_budget(150));
  const TunePlan plan = make_plan(smart_space(), budget);
  EXPECT_TRUE(plan.budget_too_small);
  EXPECT_LT(plan.fits, 16u);
  EXPECT_NE(plan.budget_note.find("too small to screen every one-knob change"), std::string::npos);
  EXPECT_NE(plan.summary.find(plan.budget_note), std::string::npos);
}

TEST(TunePlanTest, AnExhaustiveSearchOverItsBudgetFitsWhatTheBudgetPaysFor) {
  ManualTimeSource clock;
  TuneBudget budget(clock, with_budget(200));
  PlanInputs in = smart_space();
  in.search = SearchKind::kExhaustive;
  in.finished = 10;
  const TunePlan plan = make_plan(in, budget);
  EXPECT_TRUE(plan.budget_too_small);
  // (200 - 80 s of reserve) / (2 * 2 + 2) s a point.
  EXPECT_EQ(plan.points, 20u);
  EXPECT_NE(plan.budget_note.find("the 50 points to run"), std::string::npos) << plan.budget_note;
}

TEST(TunePlanTest, TheGuidesStartsTheCompilesAndTheClusterAreInTheLine) {
  ManualTimeSource clock;
  TuneBudget budget(clock, with_budget(0));
  PlanInputs in = smart_space();
  in.starts = "Python torch.compile fp16 ~38 s";
  in.compiles = "torch.compile: 8 point(s) compile in their worker";
  in.machines = "on the Ray cluster at head:6379";
  const TunePlan plan = make_plan(in, budget);
  EXPECT_NE(plan.summary.find("first the guides' starts (Python torch.compile fp16 ~38 s)"),
            std::string::npos);
  EXPECT_NE(plan.summary.find("; torch.compile: 8 point(s)"), std::string::npos);
  EXPECT_NE(plan.summary.find("; on the Ray cluster"), std::string::npos);
  EXPECT_NE(plan.summary.find("until they stop beating the best"), std::string::npos);
}

}  // namespace torchperf
