#include "torchperf/trace/trace_ranks.h"

#include <gtest/gtest.h>

#include "support/trace_text.h"
#include "torchperf/error.h"
#include "torchperf/trace/trace_reader.h"

namespace torchperf {
namespace {

using testing::TraceText;

// A rank whose steps take `step_us` each, with a communication kernel half under computation.
TraceAnalysis rank(int r, double step_us, std::vector<int> steps) {
  TraceText t;
  t.device().rank(r, 2);
  double at = 0;
  for (int n : steps) {
    t.step(n, at, step_us)
        .runtime("cudaLaunchKernel", at, 1, n * 10 + 1)
        .kernel("gemm", at + 1, step_us / 2, n * 10 + 1)
        .runtime("cudaLaunchKernel", at + 1, 1, n * 10 + 2)
        .kernel("ncclKernel_AllReduce", at + 1 + step_us / 4, step_us / 2, n * 10 + 2);
    at += step_us;
  }
  return analyze_trace(read_trace_text(t.json(), "rank" + std::to_string(r) + ".json"));
}

TEST(CompareRanks, NamesTheSlowestRankAndTheSpread) {
  const RankComparison c = compare_ranks({rank(1, 300, {1, 2}), rank(0, 100, {1, 2})}, false);
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_EQ(c.ranks[0].rank, 0);  // in rank order
  EXPECT_EQ(c.ranks[1].rank, 1);
  EXPECT_EQ(c.slowest, 1u);
  EXPECT_NEAR(c.spread, 3.0, 0.05);
  EXPECT_TRUE(c.warning.empty());
  EXPECT_EQ(c.shared_steps, (std::vector<std::int64_t>{1, 2}));
  EXPECT_NEAR(c.ranks[0].overlap, 0.5, 0.02);
}

TEST(CompareRanks, RanksWithDifferentStepsAreComparedOnTheStepsTheyShare) {
  const RankComparison c = compare_ranks({rank(0, 100, {1, 2, 3}), rank(1, 100, {2, 3})}, false);
  EXPECT_EQ(c.shared_steps, (std::vector<std::int64_t>{2, 3}));
  EXPECT_NE(c.warning.find("rank 0 (rank0.json) has 3 (#1-#3), rank 1 (rank1.json) has 2 (#2-#3)"),
            std::string::npos)
      << c.warning;
  EXPECT_NE(c.warning.find("uses the 2 steps they share"), std::string::npos);
  EXPECT_EQ(c.ranks[0].steps, 3u);
}

TEST(CompareRanks, DifferentStepsAreAnErrorWithStrict) {
  EXPECT_THROW(compare_ranks({rank(0, 100, {1, 2}), rank(1, 100, {3})}, true), TraceError);
}

}  // namespace
}  // namespace torchperf
