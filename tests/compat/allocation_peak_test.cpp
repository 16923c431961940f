#include "torchperf/compat/allocation_peak.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

namespace torchperf::compat {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

TEST(AllocationPeakTest, CountsTheMostHeldAtOnceNotTheSumOfAllocations) {
  AllocationPeak peak(DeviceKind::kCpu);
  for (int i = 0; i < 3; ++i) {
    const auto t = torch::empty({kMiB}, torch::kByte);  // freed before the next
    EXPECT_EQ(peak.held_bytes(), kMiB);
  }
  {
    const auto a = torch::empty({2 * kMiB}, torch::kByte);
    const auto b = torch::empty({kMiB}, torch::kByte);
    EXPECT_EQ(peak.held_bytes(), 3 * kMiB);
  }
  EXPECT_EQ(peak.held_bytes(), 0);
  EXPECT_EQ(peak.peak_bytes(), 3 * kMiB);
}

TEST(AllocationPeakTest, IgnoresWhatWasAllocatedBeforeItAndWhatOtherThreadsAllocate) {
  auto before = torch::empty({4 * kMiB}, torch::kByte);
  AllocationPeak peak(DeviceKind::kCpu);
  before = torch::Tensor();  // freed inside: not the scope's
  std::thread([] { const auto t = torch::empty({8 * kMiB}, torch::kByte); }).join();
  const auto kept = torch::empty({kMiB}, torch::kByte);
  EXPECT_EQ(peak.held_bytes(), kMiB);
  EXPECT_EQ(peak.peak_bytes(), kMiB);
}

TEST(AllocationPeakTest, SeesTheIntermediatesOfAnOperationThatFreesThemBeforeReturning) {
  const auto x = torch::randn({256, 1024});
  AllocationPeak peak(DeviceKind::kCpu);
  // (x * 2 + 1).sum(): two 1 MiB temporaries at once at most, a scalar left.
  const auto y = (x * 2 + 1).sum();
  EXPECT_GE(peak.peak_bytes(), 2 * kMiB);
  EXPECT_LT(peak.held_bytes(), 1024);
}

TEST(AllocationPeakTest, CountsOnlyItsDevice) {
  AllocationPeak peak(DeviceKind::kCuda);
  const auto t = torch::empty({kMiB}, torch::kByte);
  EXPECT_EQ(peak.peak_bytes(), 0);
}

}  // namespace
}  // namespace torchperf::compat
