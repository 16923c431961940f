#include "torchperf/sweep/compile_costs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace torchperf {

TEST(CompileCostsTest, ALaterTuneReadsWhatAnEarlierOneRecordedAndSkipsADamagedLine) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-costs-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string path = (dir / "costs" / "model.jsonl").string();
  {
    CompileCosts first(path);
    EXPECT_FALSE(first.seen("aoti:precision=fp32").has_value());
    first.record("aoti:precision=fp32", 42.5);
    first.record("compile:compile:runtime=python,threads=2", 30);
    first.record("compile:compile:runtime=python,threads=1", 35);
    EXPECT_EQ(first.remembered("compile:"), 0u);
  }
  std::ofstream(path, std::ios::app) << "{\"what\": 3}\nnot json\n";
  CompileCosts later(path);
  EXPECT_EQ(later.seen("aoti:precision=fp32"), 42.5);
  EXPECT_EQ(later.longest("compile:compile:"), 35.0);
  EXPECT_EQ(later.count("compile:"), 2u);
  EXPECT_EQ(later.remembered("compile:"), 2u);
  EXPECT_FALSE(later.longest("compile:compile-max-autotune:").has_value());
  later.record("compile:compile:runtime=python,threads=1", 5);  // Inductor's cache was warm
  EXPECT_EQ(later.seen("compile:compile:runtime=python,threads=1"), 5.0);
  EXPECT_EQ(later.remembered("compile:"), 1u);
  EXPECT_EQ(CompileCosts(path).seen("compile:compile:runtime=python,threads=1"), 5.0)
      << "the latest line wins";
  std::filesystem::remove_all(dir);
}

TEST(CompileCostsTest, WithoutAFileOnlyThisTunesCostsAreKnown) {
  CompileCosts costs;
  costs.record("aoti:a", 1);
  EXPECT_EQ(costs.seen("aoti:a"), 1.0);
  EXPECT_EQ(costs.count("aoti:"), 1u);
}

}  // namespace torchperf
