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
  r.environment.torch_version = "1.13.0";
  r.measurement = synthetic();
  const auto j = to_json(r);
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["kind"], "measurement");
  EXPECT_EQ(j["context"]["torch_version"], "1.13.0");
  EXPECT_TRUE(j["context"].contains("blas"));
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
  c.speedup = summarize({1.2, 1.3, 1.25});
  c.verdict = "faster";
  BenchResult r;
  r.comparison = c;
  const auto j = to_json(r);
  EXPECT_EQ(j["kind"], "comparison");
  EXPECT_EQ(j["comparison"]["verdict"], "faster");
  EXPECT_DOUBLE_EQ(j["comparison"]["speedup"]["median"].get<double>(), 1.25);
  EXPECT_TRUE(j["comparison"].contains("a"));
  EXPECT_TRUE(j["comparison"].contains("b"));
}

}  // namespace torchperf
