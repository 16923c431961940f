#include "torchperf/sweep/search.h"

#include <gtest/gtest.h>

#include <set>

#include "support/search_landscape.h"
#include "torchperf/error.h"

namespace torchperf {

TEST(SearchTest, StrategiesAreNamedAndUnknownOnesRefused) {
  EXPECT_EQ(search_kind_from_string("smart"), SearchKind::kSmart);
  EXPECT_EQ(to_string(SearchKind::kExhaustive), "exhaustive");
  try {
    search_kind_from_string("greedy");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--search 'greedy': expected smart or exhaustive");
  }
  EXPECT_EQ(search_stage_from_string("final"), SearchStage::kFinal);
}

TEST(SearchTest, ExhaustiveProposesEveryPointOnceInFullInTheInformativeOrder) {
  const Space s = landscape_space();
  auto search = make_search(SearchKind::kExhaustive, s, {7});
  const Trail r = drive(*search, s, 0, {}, 1, 1);
  ASSERT_EQ(r.proposals.size(), s.points.size());
  const auto order = informative_order(s, 7);
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(r.proposals[i].point, order[i]);
    EXPECT_FALSE(r.proposals[i].brief);
  }
}

TEST(SearchTest, ExhaustiveStopsWhenTheBudgetCannotPayForAPoint) {
  const Space s = landscape_space();
  auto search = make_search(SearchKind::kExhaustive, s);
  const Trail r = drive(*search, s, 0, {10.5, 1, 2}, 1, 2);
  EXPECT_EQ(r.proposals.size(), 5u);
}

TEST(SearchTest, TheExhaustiveSearchProposesAheadInItsOrderAndNeverAPointTwice) {
  const Space s = landscape_space();
  auto search = make_search(SearchKind::kExhaustive, s);
  std::set<std::size_t> out;
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(search->proposes_ahead());
    const auto p = search->next({});
    ASSERT_TRUE(p.has_value());
    EXPECT_TRUE(out.insert(p->point).second);
  }
  for (const std::size_t point : out) search->record(point, false, 1.0);
  const auto next = search->next({});
  ASSERT_TRUE(next.has_value());
  EXPECT_FALSE(out.count(next->point));
}

}  // namespace torchperf
