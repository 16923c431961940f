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

}  // namespace
}  // namespace torchperf
