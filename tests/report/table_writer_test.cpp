#include "torchperf/report/table_writer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace torchperf {
namespace {

BenchResult synthetic(bool valid) {
  BenchResult r;
  r.environment.torch_version = "2.13.0";
  r.environment.torch_build = parse_torch_build(
      "  - Intel(R) MKL-DNN v3.12.0 (Git Hash x)\n  - Build settings: BLAS_INFO=mkl,\n");
  r.environment.warnings = {"the machine was busy before this run"};
  Measurement m;
  m.model = "builtin:mlp";
  m.samples.iteration_ns = {1000, 1000};
  m.samples.summary = summarize(m.samples.iteration_ns);
  m.samples.stop = StopReason::kTimeBudgetSpent;
  m.throughput_samples_per_s = 1e6;
  m.flops_per_sample = 2000000;
  m.valid = valid;
  m.invalid_reason = valid ? "" : "output has 3 NaN/Inf values";
  m.warnings = {"stopping rule not met"};
  r.measurement = m;
  return r;
}

}  // namespace

TEST(TableWriterTest, FormatsBytesInBinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3 * 1024 * 1024), "3.0 MiB");
  EXPECT_EQ(format_bytes(2LL * 1024 * 1024 * 1024), "2.00 GiB");
}

TEST(TableWriterTest, AResultShowsItsNumbersWarningsAndVerdict) {
  const std::string out = format_result(synthetic(true));
  EXPECT_EQ(out.rfind("***WARNING*** the machine was busy", 0), 0u);
  for (const char* text :
       {"throughput", "latency per call", "median CI / CV", "NOT met", "cold start", "peak RSS",
        "vs fp32 reference", "GFLOP per sample", "warning: stopping rule", "MKL, oneDNN v3.12.0"})
    EXPECT_NE(out.find(text), std::string::npos) << text;
  EXPECT_NE(out.find("Result is : VALID"), std::string::npos);
}

TEST(TableWriterTest, AnInvalidResultSaysWhy) {
  const std::string out = format_result(synthetic(false));
  EXPECT_NE(out.find("INVALID: output has 3 NaN/Inf values"), std::string::npos);
  EXPECT_NE(out.find("Result is : INVALID"), std::string::npos);
}

TEST(TableWriterTest, TooFewSamplesShowNoIntervalRatherThanAFalseOne) {
  BenchResult r = synthetic(true);
  r.measurement->samples.summary = summarize({1000});
  r.measurement->throughput_ci = {std::nan(""), std::nan("")};
  const std::string out = format_result(r);
  EXPECT_NE(out.find("95% CI n/a: fewer than 6 samples"), std::string::npos);
  EXPECT_NE(out.find("±n/a"), std::string::npos);
}

TEST(TableWriterTest, WorkerKnobsShowOnlyAwayFromTheirBaselineWithWhatTheProcessConfirmed) {
  WorkloadTraits traits;
  BenchResult r = synthetic(true);
  r.measurement->configuration =
      resolve(Configuration::parse("threads=1,allocator=glibc-tuned"), traits);
  r.measurement->process = {{"allocator", "glibc-tuned (MALLOC_MMAP_THRESHOLD_=32MiB, …)"},
                            {"omp_wait", "default (OMP_WAIT_POLICY=(unset))"}};
  r.measurement->advice = {"1234 minor page faults per call in steady state: …"};
  const std::string out = format_result(r);
  EXPECT_NE(out.find("allocator=glibc-tuned"), std::string::npos) << out;
  EXPECT_EQ(out.find("omp_wait=default"), std::string::npos) << out;
  EXPECT_NE(out.find("process: allocator     glibc-tuned (MALLOC_MMAP_THRESHOLD_=32MiB, …)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("process: omp_wait"), std::string::npos) << "omp_wait is at its baseline";
  EXPECT_NE(out.find("  advice: 1234 minor page faults"), std::string::npos) << out;
}

TEST(TableWriterTest, AComparisonStatesTheRatioAndVerdict) {
  Comparison c;
  c.a = *synthetic(true).measurement;
  c.a.paired = true;
  c.b = c.a;
  c.speedup = estimate_ratio({1.2, 1.2, 1.2, 1.2, 1.2, 1.2});
  c.verdict = Verdict::kFaster;
  c.separate_processes = true;
  const std::string out = format_comparison(c);
  EXPECT_NE(out.find("A vs B: 1.200x samples/s (95% CI 1.200 – 1.200) over 6 interleaved rounds"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("each side in its own worker process"), std::string::npos);
  EXPECT_NE(out.find("A is faster"), std::string::npos);
  EXPECT_EQ(out.find("; stopping rule"),
            std::string::npos);  // each side says the rule was the ratio's
  EXPECT_NE(out.find("the ratio's stopping rule"), std::string::npos);
}

}  // namespace torchperf
