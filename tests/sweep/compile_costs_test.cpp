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
  const CompileId package{"aoti", "precision=fp32"};
  const CompileId two{"python-compile", "compile", "runtime=python,threads=2"};
  const CompileId one{"python-compile", "compile", "runtime=python,threads=1"};
  {
    CompileCosts first(path);
    EXPECT_FALSE(first.seen(package).has_value());
    first.record(package, 42.5);
    first.record(two, 30);
    first.record(one, 35);
    EXPECT_EQ(first.remembered("python-compile"), 0u);
  }
  std::ofstream(path, std::ios::app) << "{\"what\": 3}\nnot json\n";
  CompileCosts later(path);
  EXPECT_EQ(later.seen(package), 42.5);
  EXPECT_EQ(later.longest("python-compile", "compile"), 35.0);
  EXPECT_EQ(later.longest("aoti"), 42.5);
  EXPECT_EQ(later.count("python-compile"), 2u);
  EXPECT_EQ(later.remembered("python-compile"), 2u);
  EXPECT_FALSE(later.longest("python-compile", "compile-max-autotune").has_value());
  later.record(one, 5);  // Inductor's cache was warm
  EXPECT_EQ(later.seen(one), 5.0);
  EXPECT_EQ(later.remembered("python-compile"), 1u);
  EXPECT_EQ(CompileCosts(path).seen(one), 5.0) << "the latest line wins";
  std::filesystem::remove_all(dir);
}

TEST(CompileCostsTest, AModesHistoryIsNotAnotherModesOfTheSameRuntime) {
  CompileCosts costs;
  costs.record({"python-compile", "compile-reduce-overhead", "k"}, 9);
  EXPECT_FALSE(costs.longest("python-compile", "compile").has_value());
  EXPECT_EQ(costs.longest("python-compile"), 9.0);
}

TEST(CompileCostsTest, AFileWrittenBeforeCompilesWereKeyedByRuntimeStillPricesThem) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-costs-old-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.jsonl").string();
  std::ofstream(path) << "{\"what\": \"compile:compile:runtime=python\", \"compile_s\": 21}\n"
                      << "{\"what\": \"aoti:precision=fp32\", \"compile_s\": 40}\n";
  const CompileCosts costs(path);
  EXPECT_EQ(costs.seen({"python-compile", "compile", "runtime=python"}), 21.0);
  EXPECT_EQ(costs.seen({"aoti", "precision=fp32"}), 40.0);
  std::filesystem::remove_all(dir);
}

TEST(CompileCostsTest, WithoutAFileOnlyThisTunesCostsAreKnown) {
  CompileCosts costs;
  costs.record({"aoti", "a"}, 1);
  EXPECT_EQ(costs.seen({"aoti", "a"}), 1.0);
  EXPECT_EQ(costs.count("aoti"), 1u);
}

}  // namespace torchperf
