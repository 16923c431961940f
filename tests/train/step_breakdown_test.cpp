#include "torchperf/train/step_breakdown.h"

#include <gtest/gtest.h>

namespace torchperf {
namespace {

StepTimes step(double wait_ms, double forward_ms, std::int64_t samples) {
  StepTimes t;
  t.ns[static_cast<std::size_t>(Phase::kDataWait)] = wait_ms * 1e6;
  t.ns[static_cast<std::size_t>(Phase::kForward)] = forward_ms * 1e6;
  t.total_ns = (wait_ms + forward_ms) * 1e6;
  t.samples = samples;
  return t;
}

TEST(StepBreakdownTest, SharesSumToOneAndThroughputIsSamplesOverTime) {
  const Breakdown b = summarize_steps({step(10, 30, 8), step(30, 30, 8)});
  EXPECT_DOUBLE_EQ(b.step_ns, 50e6);
  EXPECT_DOUBLE_EQ(b.share_of(Phase::kDataWait), 0.4);
  EXPECT_DOUBLE_EQ(b.share_of(Phase::kForward), 0.6);
  EXPECT_DOUBLE_EQ(b.utilisation, 0.6);
  EXPECT_DOUBLE_EQ(b.samples_per_second, 16 / 0.1);
  EXPECT_EQ(b.dominant_phase(), Phase::kForward);
}

TEST(StepBreakdownTest, CountsStepsTheScalerSkipped) {
  StepTimes skipped = step(1, 1, 1);
  skipped.stepped = false;
  EXPECT_EQ(summarize_steps({skipped, step(1, 1, 1)}).skipped_steps, 1u);
}

TEST(StepBreakdownTest, MemoryFractionIsUnknownWithoutACapacity) {
  Breakdown b;
  b.peak_memory_bytes = 10;
  EXPECT_LT(b.memory_fraction(), 0);
  b.memory_capacity_bytes = 100;
  EXPECT_DOUBLE_EQ(b.memory_fraction(), 0.1);
}

TEST(StepBreakdownTest, ARanksOwnWorkIsItsStepWithoutTheAllReduceItWaitedFor) {
  StepTimes t = step(1, 4, 8);
  t.ns[static_cast<std::size_t>(Phase::kAllReduce)] = 5e6;
  t.total_ns += 5e6;
  const RankBreakdown r = summarize_rank(1, "node-a", {t, t}, 1 << 20);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.host, "node-a");
  EXPECT_DOUBLE_EQ(r.step_ns, 10e6);
  EXPECT_DOUBLE_EQ(r.busy_ns, 5e6);
  EXPECT_EQ(r.peak_memory_bytes, 1 << 20);
  // The all-reduce is waited for, not computed: it is not utilisation.
  EXPECT_DOUBLE_EQ(summarize_steps({t}).utilisation, 0.4);
  EXPECT_STREQ(phase_name(Phase::kAllReduce), "all-reduce");
  EXPECT_STREQ(phase_key(Phase::kAllReduce), "all_reduce");
}

TEST(StepBreakdownTest, TheStragglerGapIsTheSlowestRanksOwnWorkOverTheMedianRanks) {
  auto rank = [](int r, double busy_ms) {
    RankBreakdown b;
    b.rank = r;
    b.busy_ns = busy_ms * 1e6;
    return b;
  };
  EXPECT_DOUBLE_EQ(straggler_gap_ns({rank(0, 10), rank(1, 12), rank(2, 19)}), 7e6);
  EXPECT_DOUBLE_EQ(straggler_gap_ns({rank(0, 10), rank(1, 14)}), 2e6);  // the median of two
  EXPECT_DOUBLE_EQ(straggler_gap_ns({rank(0, 10)}), 0);
}

}  // namespace
}  // namespace torchperf
