#include "torchperf/bench/bench_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <torch/cuda.h>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

BenchOptions quick(const std::string& model) {
  BenchOptions o;
  o.model = model;
  o.time_s = 0.2;
  return o;
}

BenchResult bench(const BenchOptions& o) {
  SteadyTimeSource clock;
  return run_bench(o, clock);
}

}  // namespace

TEST(BenchRunnerTest, MeasuresABuiltinWithEveryFieldFilledIn) {
  BenchOptions o = quick("builtin:mlp");
  o.config = Configuration::parse("batch=4,grad=no_grad");
  const BenchResult r = bench(o);
  ASSERT_TRUE(r.measurement.has_value());
  const Measurement& m = *r.measurement;
  EXPECT_TRUE(m.valid) << m.invalid_reason;  // sound output; 0.2 s may be too short to conclude
  EXPECT_EQ(m.batch, 4);
  EXPECT_GT(m.throughput_samples_per_s, 0);
  // Beside a busy test, 0.2 s may hold fewer than 6 timed blocks, where no interval covers the
  // median at 95% (statistics.cpp): then none is given, rather than a false one (a CI run, 12-02).
  if (m.samples.summary.count >= 6) {
    EXPECT_LE(m.throughput_ci.low, m.throughput_samples_per_s);
    EXPECT_GE(m.throughput_ci.high, m.throughput_samples_per_s);
  } else {
    EXPECT_TRUE(std::isnan(m.throughput_ci.low) && std::isnan(m.throughput_ci.high));
  }
  EXPECT_LE(m.latency_p50_ms, m.latency_p99_ms);
  EXPECT_GT(m.samples.summary.count, 0u);
  EXPECT_GT(m.samples.warmup.first_call.count(), 0);
  EXPECT_GT(m.peak_memory_bytes, 0);
  EXPECT_NEAR(m.quality.cosine, 1, 1e-9);
  // Three Linear layers: 2 * (784*512 + 512*512 + 512*10) FLOPs per sample (addmm).
  EXPECT_EQ(m.flops_per_sample, 2u * (784 * 512 + 512 * 512 + 512 * 10));
  EXPECT_GT(m.achieved_gflops, 0);
  EXPECT_EQ(m.configuration.value("grad"), "no_grad");
}

TEST(BenchRunnerTest, AStreamsPaddingIsCheckedUnlessTheRunIsToldToSkipIt) {
  // A tune's brief points skip the check (under torch.compile each sample alone is a recompile).
  BenchOptions o = quick("builtin:encoder");
  o.input_spec = "int64:S@0..1000;int64:S@1..2";
  o.dims = {"S=4..64"};
  o.target_relative_ci = 0.5;
  o.config = Configuration::parse("batch=4,grad=inference");
  const BenchResult checked = bench(o);
  ASSERT_TRUE(checked.measurement && checked.measurement->stream);
  EXPECT_EQ(checked.measurement->stream->padding_check_lengths.size(), 3u);
  o.check_padding = false;
  const BenchResult skipped = bench(o);
  ASSERT_TRUE(skipped.measurement && skipped.measurement->stream);
  EXPECT_TRUE(skipped.measurement->stream->padding_check_lengths.empty());
  EXPECT_GT(skipped.measurement->quality.cosine, 0.999) << "the output check still runs";
}

TEST(BenchRunnerTest, OnCudaTimedBlocksLastLongEnoughForTheDevicesIdleGapToVanish) {
  BenchOptions o;
  o.model = "builtin:mlp";
  EXPECT_EQ(sampling_options(o, c10::Device(c10::kCUDA, 0)).min_block_time,
            kAsynchronousDeviceMinBlockTime);
  EXPECT_EQ(sampling_options(o, c10::Device(c10::kCPU)).min_block_time, SamplingOptions{}.min_block_time);
}

TEST(BenchRunnerTest, ComparesTwoConfigurationsInterleaved) {
  BenchOptions o = quick("builtin:mlp");
  o.config = Configuration::parse("grad=no_grad");
  o.vs = Configuration();
  const BenchResult r = bench(o);
  ASSERT_TRUE(r.comparison.has_value());
  const Comparison& c = *r.comparison;
  EXPECT_EQ(c.a.configuration.value("grad"), "no_grad");
  EXPECT_EQ(c.b.configuration.value("grad"), "on");
  EXPECT_EQ(c.a.samples.summary.count, c.b.samples.summary.count);
  EXPECT_TRUE(c.a.paired);
  EXPECT_TRUE(c.b.paired);
  EXPECT_GT(c.speedup.ratio, 0);
  EXPECT_LE(c.speedup.interval.low, c.speedup.ratio);
  EXPECT_FALSE(c.separate_processes);
  EXPECT_NE(c.verdict, Verdict::kUndetermined);
}

TEST(BenchRunnerTest, VsBaselineKeepsTheBatchOfTheWorkload) {
  BenchOptions o = quick("builtin:mlp");
  o.config = Configuration::parse("batch=8,grad=no_grad");
  o.vs = named_or_parsed("baseline");
  const Comparison c = *bench(o).comparison;
  EXPECT_EQ(c.a.batch, 8);
  EXPECT_EQ(c.b.batch, 8);
  EXPECT_EQ(c.b.configuration.value("grad"), "on");
}

TEST(BenchRunnerTest, BatchRatiosCompareSamplesPerSecond) {
  BenchOptions o = quick("builtin:mlp");
  o.config = Configuration::parse("batch=16,grad=no_grad");
  o.vs = Configuration::parse("batch=1,grad=no_grad");
  const Comparison c = *bench(o).comparison;
  // The speedup is in samples/s, not per call: a per-call ratio would be 16 times smaller. The
  // median of per-round ratios and the ratio of the medians are two estimates from the same
  // noisy blocks (20 us calls, other tests running beside: a fresh clone's CI read 5.2 of 4 on
  // 2026-12-08), so only a factor of 8 is asserted, which still tells samples/s from per call.
  const double ratio = c.a.throughput_samples_per_s / c.b.throughput_samples_per_s;
  EXPECT_GT(c.speedup.median / ratio, 1.0 / 8);
  EXPECT_LT(c.speedup.median / ratio, 8.0);
}

TEST(BenchRunnerTest, ATorchvisionModelFromAFileMeasuresWithItsSavedInputs) {
  BenchOptions o = quick(testing::fixture("resnet18_scripted.pt"));
  o.inputs_file = testing::fixture("inputs_image.pt");
  o.config = Configuration::parse("grad=inference");
  const BenchResult r = bench(o);
  EXPECT_EQ(r.measurement->batch, 2);
  EXPECT_FALSE(r.measurement->configuration.knob("batch").applicable);
  EXPECT_NEAR(r.measurement->quality.cosine, 1, 1e-6);
}

TEST(BenchRunnerTest, ARunTooShortToConcludeIsInvalidAndTheVerdictSaysWhy) {
  BenchOptions o = quick("builtin:mlp");
  o.time_s = 0.002;
  o.config = Configuration::parse("batch=4,grad=no_grad");
  const BenchResult r = bench(o);
  EXPECT_TRUE(r.measurement->valid) << "the output itself is sound";
  EXPECT_FALSE(r.valid());
  const std::string why = r.invalid_reason();
  EXPECT_TRUE(why.rfind("stopping rule not met", 0) == 0 ||
              why.rfind("warm-up did not settle", 0) == 0 || why.rfind("one call takes", 0) == 0)
      << why;
  EXPECT_EQ(why, r.measurement->inconclusive_reason);
}

TEST(BenchRunnerTest, InputsLargerThanTheMemoryCapAreRefusedBeforeAllocation) {
  BenchOptions o = quick("builtin:mlp");
  o.config = Configuration::parse("batch=100000000");
  o.memory_cap_bytes = std::int64_t{1} << 30;
  try {
    bench(o);
    ADD_FAILURE() << "a 292 GiB input was not refused";
  } catch (const ResourceLimit& e) {
    EXPECT_NE(std::string(e.what()).find("at batch 100000000: the inputs alone need 292.06 GiB, "
                                         "over the memory cap of 1.00 GiB"),
              std::string::npos)
        << e.what();
  }
}

TEST(BenchRunnerTest, MeasuresEveryTorchvisionAndTorchNnFixture) {
  const std::vector<std::pair<std::string, std::string>> fixtures = {
      {"resnet18_traced.pt", "3x64x64"},
      {"mobilenet_v2_scripted.pt", "3x64x64"},
      {"transformer_scripted.pt", "16x64"},
      {"structured_output.pt", "5"},
  };
  for (const auto& [file, spec] : fixtures) {
    BenchOptions o = quick(testing::fixture(file));
    o.time_s = 0.1;
    o.input_spec = spec;
    o.config = Configuration::parse("batch=2,grad=no_grad");
    const BenchResult r = bench(o);
    EXPECT_TRUE(r.measurement->valid) << file << ": " << r.measurement->invalid_reason;
    EXPECT_GT(r.measurement->throughput_samples_per_s, 0) << file;
    EXPECT_NEAR(r.measurement->quality.cosine, 1, 1e-6) << file;
  }
}

TEST(BenchRunnerTest, FreezingAndChannelsLastWorkOnATorchvisionModel) {
  BenchOptions o = quick(testing::fixture("mobilenet_v2_scripted.pt"));
  o.time_s = 0.1;
  o.input_spec = "3x64x64";
  o.config = Configuration::parse("grad=inference,format=channels_last,graph=frozen-opt");
  const Measurement m = *bench(o).measurement;
  EXPECT_GT(m.quality.cosine, 0.9999);
  EXPECT_EQ(m.configuration.value("graph"), "frozen-opt");
}

TEST(BenchRunnerTest, AModelSavedInTrainingModeIsMeasuredAsSavedAgainstAnEvalReference) {
  BenchOptions o = quick(testing::fixture("resnet18_train_scripted.pt"));
  o.input_spec = "3x64x64";
  o.config = Configuration::parse("batch=2");
  const Measurement m = *bench(o).measurement;
  EXPECT_EQ(m.configuration.value("mode"), "train");
  EXPECT_LT(m.quality.cosine, 0.9999);  // batch statistics differ from running statistics
}

TEST(BenchRunnerTest, NanOutputMakesTheResultInvalid) {
  BenchOptions o = quick(testing::fixture("nan_output.pt"));
  o.input_spec = "8";
  const BenchResult r = bench(o);
  EXPECT_FALSE(r.valid());
  EXPECT_NE(r.measurement->invalid_reason.find("NaN/Inf"), std::string::npos);
}

TEST(BenchRunnerTest, AWrongShapeNamesTheInputsAndWhatTheModelSaid) {
  BenchOptions o = quick(testing::fixture("resnet18_scripted.pt"));
  o.input_spec = "3x100";
  try {
    bench(o);
    FAIL();
  } catch (const WorkloadError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("Float[1,3,100]"), std::string::npos);
    EXPECT_NE(message.find("channels"), std::string::npos);
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST(BenchRunnerTest, TooFewInputsNameTheForwardArguments) {
  BenchOptions o = quick(testing::fixture("two_inputs.pt"));
  o.input_spec = "8x16";
  try {
    bench(o);
    FAIL();
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("(a, b)"), std::string::npos);
  }
}

TEST(BenchRunnerTest, AFileModelWithoutInputsAsksForThem) {
  EXPECT_THROW(bench(quick(testing::fixture("two_inputs.pt"))), UsageError);
}

TEST(BenchRunnerTest, RefusesCudaWhenThereIsNone) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  BenchOptions o = quick("builtin:mlp");
  o.device = "cuda";
  EXPECT_THROW(bench(o), UsageError);
}

}  // namespace torchperf

namespace torchperf {

// Runs only where a GPU is present (the device machine); skipped elsewhere.
TEST(BenchRunnerTest, MeasuresOnTheGpuWithCudaKnobs_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  BenchOptions o = quick("builtin:resnet18");
  o.device = "cuda";
  o.config = Configuration::parse(
      "batch=8,grad=inference,precision=fp16-autocast,cudnn_benchmark=on,tf32=on");
  const BenchResult r = bench(o);
  ASSERT_TRUE(r.measurement->valid) << r.measurement->invalid_reason;
  EXPECT_EQ(r.measurement->device, "cuda:0");
  EXPECT_GT(r.measurement->quality.cosine, 0.99);
  EXPECT_TRUE(r.environment.cuda_available);
  EXPECT_EQ(r.measurement->peak_memory_kind, "cuda-caching-allocator");
}

}  // namespace torchperf
