#include "torchperf/bench/measurement_json.h"

#include <gtest/gtest.h>

#include <cmath>

namespace torchperf {
namespace {

Measurement synthetic() {
  Measurement m;
  m.model = "builtin:mlp";
  m.batch = 4;
  m.samples.iteration_ns = {1000, 1100};
  m.samples.summary = summarize(m.samples.iteration_ns);
  m.throughput_samples_per_s = 3800;
  m.quality.cosine = std::nan("");
  m.quality.top1_agreement = 1.0;
  return m;
}

}  // namespace

TEST(MeasurementJsonTest, ResultsCarryASchemaVersionAndContext) {
  BenchResult r;
  r.environment.torch_version = "2.13.0";
  r.environment.torch_build = parse_torch_build("  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release\n");
  r.measurement = synthetic();
  const auto j = to_json(r);
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["kind"], "measurement");
  EXPECT_EQ(j["context"]["torch_version"], "2.13.0");
  EXPECT_EQ(j["context"]["torch_build"]["blas"], "mkl");
  EXPECT_TRUE(j["valid"].get<bool>());
}

TEST(MeasurementJsonTest, AMeasurementKeepsRawSamplesBesideAggregates) {
  const auto j = to_json(synthetic());
  EXPECT_EQ(j["samples_ns"].size(), 2u);
  EXPECT_EQ(j["iteration_ns"]["count"], 2);
  for (const char* key : {"throughput_samples_per_s", "throughput_ci", "latency_ms", "warmup",
                          "memory", "quality", "flops_per_sample", "achieved_gflops",
                          "configuration", "stopping_rule_met", "block_iterations", "warnings"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST(MeasurementJsonTest, NonFiniteNumbersBecomeNull) {
  const auto j = to_json(synthetic());
  EXPECT_TRUE(j["quality"]["cosine"].is_null());
  EXPECT_EQ(j["quality"]["top1_agreement"], 1.0);
}

TEST(MeasurementJsonTest, AComparisonHasBothSidesAndTheRatio) {
  Comparison c;
  c.a = synthetic();
  c.b = synthetic();
  c.speedup = estimate_ratio({1.2, 1.3, 1.25, 1.25});
  c.verdict = Verdict::kFaster;
  BenchResult r;
  r.comparison = c;
  const auto j = to_json(r);
  EXPECT_EQ(j["kind"], "comparison");
  EXPECT_EQ(j["comparison"]["verdict"], "faster");
  EXPECT_DOUBLE_EQ(j["comparison"]["speedup"]["median"].get<double>(), 1.25);
  EXPECT_NEAR(j["comparison"]["speedup"]["ratio"].get<double>(), 1.2494, 1e-4);
  EXPECT_EQ(j["comparison"]["speedup"]["rounds"], 4);
  EXPECT_TRUE(j["comparison"].contains("a"));
  EXPECT_TRUE(j["comparison"].contains("b"));
}

TEST(MeasurementJsonTest, AMeasurementReadBackWritesTheSameJson) {
  Measurement m = synthetic();
  m.process = {{"allocator", "jemalloc (/usr/lib/x86_64-linux-gnu/libjemalloc.so.2)"}};
  const auto j = to_json(m);
  EXPECT_EQ(to_json(measurement_from_json(j)), j);
}

TEST(MeasurementJsonTest, SamplesReadBackKeepTheirBlocksAndWarmUp) {
  SampleSet s;
  s.warmup.iterations = 7;
  s.warmup.first_call = std::chrono::milliseconds(40);
  s.warmup.settled = true;
  s.block_iterations = 3;
  s.iteration_ns = {1e6, 1.1e6, 0.9e6};
  s.measured = std::chrono::milliseconds(9);
  s.stop = StopReason::kSampleLimit;
  const SampleSet back = sample_set_from_json(to_json(s), 0.95);
  EXPECT_EQ(back.warmup.iterations, 7u);
  EXPECT_EQ(back.warmup.first_call, s.warmup.first_call);
  EXPECT_EQ(back.block_iterations, 3u);
  EXPECT_EQ(back.iteration_ns, s.iteration_ns);
  EXPECT_EQ(back.stop, StopReason::kSampleLimit);
  EXPECT_DOUBLE_EQ(back.summary.median, 1e6);
}

TEST(MeasurementJsonTest, AnEnvironmentReadBackWritesTheSameJson) {
  const Environment env = capture_environment();
  EXPECT_EQ(to_json(environment_from_json(to_json(env))), to_json(env));
}

}  // namespace torchperf
