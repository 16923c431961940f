#include "torchperf/measure/memory_probe.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

namespace torchperf {
namespace {

constexpr std::size_t kBytes = 64 << 20;

void* touch_new_memory() {
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  std::memset(p, 1, kBytes);
  return p;
}

}  // namespace

TEST(MemoryProbeTest, PeakIsAtLeastTheCurrentResidentSet) {
  EXPECT_GT(current_rss_bytes(), 0);
  EXPECT_GE(peak_rss_bytes(), current_rss_bytes());
}

TEST(MemoryProbeTest, TouchingNewMemoryRaisesPeakAndCountsPageFaults) {
  const auto faults = minor_page_faults();
  const auto before = current_rss_bytes();
  void* p = touch_new_memory();
  EXPECT_GE(peak_rss_bytes(), before + static_cast<std::int64_t>(kBytes) * 9 / 10);
  EXPECT_GE(minor_page_faults() - faults, static_cast<std::int64_t>(kBytes / 4096 / 2));
  munmap(p, kBytes);
}

TEST(MemoryProbeTest, ResettingThePeakForgetsMemoryAlreadyFreed) {
  void* p = touch_new_memory();
  munmap(p, kBytes);
  const auto high = peak_rss_bytes();
  if (!reset_peak_rss()) GTEST_SKIP() << "this kernel does not allow resetting the peak";
  EXPECT_LT(peak_rss_bytes(), high - static_cast<std::int64_t>(kBytes) / 2);
}

}  // namespace torchperf
