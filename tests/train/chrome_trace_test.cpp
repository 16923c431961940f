#include "torchperf/train/chrome_trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"
#include "torchperf/error.h"
#include "torchperf/train/training_session.h"

namespace torchperf {
namespace {

TrainingContext tiny_cnn_8px() {
  TrainingSpec spec;
  spec.model = testing::fixture("tiny_cnn.pt");
  spec.data.image_size = 8;
  return TrainingContext::open(spec);
}

TEST(ChromeTraceTest, WritesPhasesAndOperatorEventsOfTheActiveStepsOnly) {
  const TrainingContext c = tiny_cnn_8px();
  TrainingSession s(c, Configuration::parse("batch=2"));
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("torchperf_trace_test-" + std::to_string(::getpid()) + ".json"))
          .string();
  std::filesystem::remove(path);
  const TraceSummary summary = write_trace(s, TraceSchedule{1, 1, 2}, path);
  EXPECT_EQ(summary.steps, 2u);
  // Every phase but the all-reduce (DDP's, in Python: a TorchScript step has none).
  EXPECT_EQ(summary.phase_events, 2u * (kPhaseCount - 1));
  EXPECT_GT(summary.operator_events, 0u);
  EXPECT_EQ(s.steps_done(), 4u);
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::size_t steps = 0, convolutions = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("cat", "") == "step") ++steps;
    if (e.value("name", "").find("conv") != std::string::npos) ++convolutions;
  }
  EXPECT_EQ(steps, 2u);
  EXPECT_GT(convolutions, 0u);
  std::filesystem::remove(path);
}

TEST(ChromeTraceTest, AnUnwritablePathIsAUsageError) {
  const TrainingContext c = tiny_cnn_8px();
  TrainingSession s(c, Configuration::parse("batch=2"));
  EXPECT_THROW(write_trace(s, TraceSchedule{}, "/proc/torchperf/trace.json"), UsageError);
}

}  // namespace
}  // namespace torchperf
