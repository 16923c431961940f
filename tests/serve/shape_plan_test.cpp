#include "torchperf/serve/shape_plan.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {

namespace {
BatchingPolicy buckets(std::vector<std::int64_t> edges, std::size_t max_batch = 8) {
  BatchingPolicy p;
  p.max_batch = max_batch;
  p.edges = std::move(edges);
  p.padded = [edges = p.edges](std::int64_t l) {
    for (const auto e : edges)
      if (l <= e) return e;
    return l;
  };
  return p;
}
}  // namespace

TEST(ShapePlanTest, CallLengthsAreTheEdgesWithTheShareOfRequestsEachTakesBusiestFirst) {
  const auto lengths =
      call_lengths(buckets({16, 64, 512}), {3, 10, 20, 30, 40, 50, 300, 12}, false);
  ASSERT_EQ(lengths.size(), 3u);
  EXPECT_EQ(lengths[0].length, 64);
  EXPECT_DOUBLE_EQ(lengths[0].share, 4.0 / 8);
  EXPECT_EQ(lengths[1].length, 16);
  EXPECT_DOUBLE_EQ(lengths[1].share, 3.0 / 8);
  EXPECT_EQ(lengths[2].length, 512);
}

TEST(ShapePlanTest, AModelWithoutALengthHasOneCallLengthOfZeroForAllRequests) {
  const auto lengths = call_lengths(BatchingPolicy{}, {}, false);
  ASSERT_EQ(lengths.size(), 1u);
  EXPECT_EQ(lengths[0].length, 0);
  EXPECT_DOUBLE_EQ(lengths[0].share, 1.0);
}

TEST(ShapePlanTest, RowsAreEveryCountUnlessCallsPadUpToPowersOfTwoAndTheMost) {
  const BatchingPolicy p = buckets({64}, 12);
  EXPECT_EQ(call_rows(p, 64, 1, 0, false).size(), 12u);
  EXPECT_EQ(call_rows(p, 64, 1, 0, true), (std::vector<std::int64_t>{1, 2, 4, 8, 12}));
  // The model's batch range bounds them: a program exported for batch 2 to 6.
  EXPECT_EQ(call_rows(p, 64, 2, 6, true), (std::vector<std::int64_t>{2, 4, 6}));
  EXPECT_EQ(call_rows(p, 64, 2, 6, false), (std::vector<std::int64_t>{2, 3, 4, 5, 6}));
}

TEST(ShapePlanTest, ATokenBudgetCapsTheRowsAtLongLengths) {
  BatchingPolicy p = buckets({64, 512}, 32);
  p.max_tokens = 2048;
  EXPECT_EQ(call_rows(p, 64, 1, 0, true).back(), 32);
  EXPECT_EQ(call_rows(p, 512, 1, 0, true), (std::vector<std::int64_t>{1, 2, 4}));
  p.max_tokens = 256;  // no call of 512 fits: nothing to plan at that length
  EXPECT_TRUE(call_rows(p, 512, 1, 0, true).empty());
}

TEST(ShapePlanTest, ThePlanPreparesTheMostExpectedCallsFirstAndACapLeavesTheRestOutSaid) {
  BatchingPolicy p = buckets({16, 64}, 4);
  p.padded = nullptr;  // calls at their own longest: only a plan that pads goes to the edges
  const std::vector<std::int64_t> drawn = {40, 40, 40, 40, 40, 40, 40, 10, 10, 10};
  // Expected: 64 at 1 row 0.7, 2 rows 0.35, 4 rows 0.23; 16 at 1 row 0.3, 2 rows 0.15, 4 0.1.
  const auto plan = plan_shapes(p, drawn, 1, 0, true, 100, 0);
  ASSERT_EQ(plan.shapes.size(), 6u);
  EXPECT_EQ(plan.shapes[0], (CallShape{1, 64}));
  EXPECT_EQ(plan.shapes[1], (CallShape{2, 64}));
  EXPECT_EQ(plan.shapes[2], (CallShape{1, 16}));
  EXPECT_EQ(plan.shapes[3], (CallShape{4, 64}));
  EXPECT_EQ(plan.shapes[5], (CallShape{4, 16}));
  EXPECT_TRUE(plan.pads);
  EXPECT_EQ(plan.edges, p.edges);
  EXPECT_EQ(plan.capped, 0u);
  const auto capped = plan_shapes(p, drawn, 1, 0, true, 2, 0);
  EXPECT_EQ(capped.shapes.size(), 2u);
  EXPECT_EQ(capped.capped, 4u);
  PreparedShapes prepared;
  prepared.shapes = {capped.shapes.begin(), capped.shapes.end()};
  const std::string text = prepared.describe(capped);
  EXPECT_NE(text.find("the cap of 2 left 4 more out (30% of requests at lengths with none)"),
            std::string::npos)
      << text;
}

TEST(ShapePlanTest, ACallServesAtItsOwnShapeOrPadsUpInRowsAndToItsEdgeOnlyWhereGraphsNeedIt) {
  PreparedShapes prepared;
  prepared.shapes = {{1, 64}, {2, 64}, {4, 64}, {1, 16}};
  EXPECT_EQ(prepared.serving({2, 64}), (CallShape{2, 64}));
  EXPECT_FALSE(prepared.serving({3, 64}).has_value());  // runs at its own rows, off the plan
  prepared.pads = true;
  prepared.edges = {16, 64};
  EXPECT_EQ(prepared.serving({3, 64}), (CallShape{4, 64}));
  EXPECT_FALSE(prepared.serving({2, 16}).has_value());  // none above it at that length
  EXPECT_FALSE(prepared.serving({5, 64}).has_value());
  EXPECT_EQ(prepared.serving({1, 32}), (CallShape{1, 64}));  // up to its bucket's edge
  EXPECT_FALSE(prepared.serving({1, 100}).has_value());     // past the last edge
}

TEST(ShapePlanTest, TheDescriptionNamesEachLengthItsShareAndRowsAndWhatTheBudgetLeftOut) {
  const BatchingPolicy p = buckets({16, 64, 512}, 4);
  const std::vector<std::int64_t> drawn = {40, 40, 40, 40, 40, 40, 10, 10, 10, 300};
  const auto plan = plan_shapes(p, drawn, 1, 0, false, 100, 64 << 20);
  PreparedShapes prepared;
  prepared.shapes = {{1, 64}, {2, 64}, {3, 64}, {4, 64}, {1, 16}};
  prepared.left_out = 7;
  prepared.bytes = 3 << 20;
  prepared.seconds = 0.25;
  const std::string text = prepared.describe(plan);
  EXPECT_NE(text.find("prepared 5 call shapes in 0.2 s"), std::string::npos) << text;
  EXPECT_NE(text.find("length 64 (60% of requests) at 1-4 rows"), std::string::npos) << text;
  EXPECT_NE(text.find("length 16 (30% of requests) at 1 rows"), std::string::npos) << text;
  EXPECT_EQ(text.find("length 512"), std::string::npos) << text;
  EXPECT_NE(text.find("the memory budget (64.0 MiB an instance) left 7 out (10% of requests at "
                      "lengths with none)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("off the plan"), std::string::npos) << text;
  prepared.failed = 2;
  prepared.first_failure = "4 rows at length 512: out of memory";
  EXPECT_NE(prepared.describe(plan).find(
                "2 failed and are left out (the first: 4 rows at length 512: out of memory)"),
            std::string::npos)
      << prepared.describe(plan);
}

TEST(ShapePlanTest, WithEdgesACallsLengthIsTheRunnersRuleFirstThenItsBucketsEdge) {
  BatchingPolicy p = buckets({100, 200}, 2);
  p.padded = [](std::int64_t l) { return (l + 63) / 64 * 64; };  // multiple:64
  const auto lengths = call_lengths(p, {90, 90, 150}, true);
  ASSERT_EQ(lengths.size(), 1u);  // 90 -> 128 -> 200, 150 -> 192 -> 200
  EXPECT_EQ(lengths[0].length, 200);
}

TEST(ShapePlanTest, AShapeIsWithinTheBudgetWhileWhatItIsExpectedToTakeStillFits) {
  EXPECT_TRUE(within_budget(0, 1 << 30, 1e6, 1e6));           // no budget
  EXPECT_TRUE(within_budget(1000, 0, 0, 512));                 // nothing known yet
  EXPECT_TRUE(within_budget(1000, 488, 1.0, 512));             // 488 + 512 = 1000
  EXPECT_FALSE(within_budget(1000, 489, 1.0, 512));
  EXPECT_FALSE(within_budget(1000, 1001, 0, 1));               // already past it
}

TEST(ShapePlanTest, TheShapesOptionIsPlannedLazyOrACountAndNamesItselfWhenWrong) {
  EXPECT_EQ(parse_shapes_option("planned"), std::optional<std::size_t>(kPlannedShapes));
  EXPECT_FALSE(parse_shapes_option("lazy").has_value());
  EXPECT_EQ(parse_shapes_option("12"), std::optional<std::size_t>(12));
  for (const std::string bad : {"eager", "0", "-3", "4G", ""}) {
    try {
      parse_shapes_option(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--shapes '" + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace torchperf
