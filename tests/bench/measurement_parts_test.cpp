// The measurement's shared parts: timing from samples, the output check and the saved outputs.
#include "torchperf/bench/measurement_parts.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "torchperf/error.h"

namespace torchperf {
namespace {

SampleSet settled(double median_ns, StopReason stop) {
  SampleSet s;
  s.warmup.settled = true;
  s.warmup.iterations = 3;
  s.stop = stop;
  s.summary.count = 20;
  s.summary.median = median_ns;
  s.summary.p90 = 1.5 * median_ns;
  s.summary.p99 = 2 * median_ns;
  s.summary.median_ci = {0.9 * median_ns, 1.1 * median_ns};
  s.summary.median_ci_relative = 0.1;
  return s;
}

TEST(MeasurementPartsTest, TimingComesFromTheMedianAndItsIntervalAtTheMeasurementsBatch) {
  Measurement m;
  m.batch = 8;
  m.flops_per_sample = 1'000'000;
  add_timing(m, settled(2e6, StopReason::kConfidenceReached), SamplingOptions{}, false);
  EXPECT_DOUBLE_EQ(m.throughput_samples_per_s, 4000);  // 8 samples per 2 ms
  EXPECT_NEAR(m.throughput_ci.low, 8 / 2.2e-3, 1e-6);
  EXPECT_NEAR(m.throughput_ci.high, 8 / 1.8e-3, 1e-6);
  EXPECT_DOUBLE_EQ(m.latency_p50_ms, 2);
  EXPECT_DOUBLE_EQ(m.latency_p99_ms, 4);
  EXPECT_DOUBLE_EQ(m.achieved_gflops, 4);  // 1 MFLOP a sample at 4000 samples/s
  EXPECT_TRUE(m.inconclusive_reason.empty());
}

TEST(MeasurementPartsTest, ABudgetSpentBeforeTheTargetIntervalSaysSo) {
  Measurement m;
  SamplingOptions sampling;
  sampling.target_relative_ci = 0.01;
  add_timing(m, settled(1e6, StopReason::kTimeBudgetSpent), sampling, false);
  EXPECT_NE(m.inconclusive_reason.find("stopping rule not met"), std::string::npos)
      << m.inconclusive_reason;
  Measurement paired;
  add_timing(paired, settled(1e6, StopReason::kTimeBudgetSpent), sampling, true);
  EXPECT_TRUE(paired.inconclusive_reason.empty()) << "a comparison's rule is the ratio's";
}

TEST(MeasurementPartsTest, AStreamsTimesAreItsTimedPassesScaledToTheWholeStream) {
  Measurement m;
  m.batch = 256;  // the stream's samples
  StreamFigures f;
  f.dims = "S=4..64";
  f.samples = 256;
  f.useful_tokens = 10'000;
  f.pass_scale = 4;  // the stream weighs four timed passes
  m.stream.emplace(std::move(f));
  add_timing(m, settled(0.5e9, StopReason::kConfidenceReached), SamplingOptions{}, false);
  EXPECT_DOUBLE_EQ(m.samples_per_call(), 64);
  EXPECT_DOUBLE_EQ(m.throughput_samples_per_s, 128);  // 256 samples per 4 x 0.5 s
  EXPECT_DOUBLE_EQ(m.stream->tokens_per_s, 5000);
  EXPECT_DOUBLE_EQ(m.latency_p50_ms, 2000) << "a pass over the whole stream, estimated";
}

TEST(MeasurementPartsTest, ARunBehindTheLeaderSaysItStoppedEarly) {
  Measurement m;
  SamplingOptions sampling;
  sampling.leader_iteration_ns = 1e6;
  add_timing(m, settled(2e6, StopReason::kBehindLeader), sampling, false);
  EXPECT_NE(m.inconclusive_reason.find("stopped early: clearly behind the tune's leader"),
            std::string::npos)
      << m.inconclusive_reason;
}

TEST(MeasurementPartsTest, NonFiniteOutputsMakeTheMeasurementInvalid) {
  const std::vector<at::Tensor> reference = {torch::ones({2, 3})};
  Measurement same;
  add_output_check(same, reference, {torch::ones({2, 3})});
  EXPECT_TRUE(same.valid);
  EXPECT_DOUBLE_EQ(same.quality.cosine, 1.0);
  Measurement nan;
  auto bad = torch::ones({2, 3});
  bad[0][0] = std::nan("");
  add_output_check(nan, reference, {bad});
  EXPECT_FALSE(nan.valid);
  EXPECT_EQ(nan.invalid_reason, "output has 1 NaN/Inf values");
}

TEST(MeasurementPartsTest, ManyPageFaultsPerCallBringTheAllocatorAdvice) {
  Measurement quiet, busy;
  add_page_faults(quiet, 0.2);
  add_page_faults(busy, 300);
  EXPECT_TRUE(quiet.advice.empty());
  ASSERT_EQ(busy.advice.size(), 1u);
  EXPECT_NE(busy.advice[0].find("allocator"), std::string::npos);
}

TEST(MeasurementPartsTest, AFileThatIsNotSavedOutputsIsARuntimeFailureNamingIt) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("torchperf-not-outputs-" + std::to_string(getpid()) + ".pt");
  std::ofstream(path) << "not a pickle";
  try {
    load_saved_outputs(path.string());
    FAIL() << "garbage read as outputs";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace torchperf
