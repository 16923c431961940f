// The Python runtime driven from here: a real Python worker, a real model, this process's sampler,
// and the output judged against the fp32 reference.
#include "torchperf/worker/python_worker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

class PythonWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-py-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  WorkerRun run() const {
    WorkerRun r;
    r.executable = TORCHPERF_TEST_CLI;
    r.log_dir = dir_.string();
    r.limits.timeout_s = 300;
    return r;
  }
  static BenchOptions options(const std::string& model, const std::string& config) {
    BenchOptions o;
    o.model = model;
    o.time_s = 0.3;
    o.target_relative_ci = 0.5;
    o.config = Configuration::parse(config);
    return o;
  }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(PythonWorkerTest, AProgramRunsInPythonTimedHereAndItsOutputsMatchTheReference) {
  SteadyTimeSource clock;
  const BenchResult r = measure_python_in_worker(
      options(testing::fixture("mlp_dynamic.pt2"), "runtime=python,batch=4,threads=1"), run(),
      clock);
  ASSERT_TRUE(r.measurement);
  const Measurement& m = *r.measurement;
  EXPECT_EQ(m.batch, 4);
  EXPECT_GT(m.throughput_samples_per_s, 0);
  EXPECT_GT(m.samples.summary.count, 0u);
  EXPECT_NEAR(m.quality.cosine, 1.0, 1e-5);
  EXPECT_TRUE(m.valid) << m.invalid_reason;
  EXPECT_EQ(m.configuration.value("graph"), "eager");
  EXPECT_EQ(m.compile_s, -1) << "eager compiles nothing";
  EXPECT_EQ(m.process.at("runtime"), "python");
  EXPECT_EQ(m.process.at("threads"), "1");
  EXPECT_GT(m.peak_memory_bytes, 0);
}

TEST_F(PythonWorkerTest, ABuiltInRunsInPythonAsTheTorchScriptItIs) {
  SteadyTimeSource clock;
  const BenchResult r = measure_python_in_worker(
      options("builtin:mlp", "runtime=python,batch=2,grad=inference"), run(), clock);
  ASSERT_TRUE(r.measurement);
  EXPECT_NEAR(r.measurement->quality.cosine, 1.0, 1e-5);
  EXPECT_EQ(r.measurement->configuration.value("grad"), "inference");
}

TEST_F(PythonWorkerTest, TheTwoRuntimesAreComparedEachInItsOwnWorker) {
  BenchOptions o = options("builtin:mlp", "runtime=python,threads=1");
  o.vs = Configuration::parse("threads=1");
  SteadyTimeSource clock;
  const BenchResult r = compare_in_workers(o, run(), clock);
  ASSERT_TRUE(r.comparison);
  EXPECT_EQ(r.comparison->a.process.at("runtime"), "python");
  EXPECT_EQ(r.comparison->b.configuration.value("runtime"), "cpp");
  EXPECT_TRUE(r.comparison->separate_processes);
  EXPECT_NEAR(r.comparison->a.quality.cosine, 1.0, 1e-5);
  EXPECT_GT(r.comparison->speedup.ratio, 0);
}

TEST_F(PythonWorkerTest, ACppConfigurationIsNotMeasuredByThePythonWorker) {
  SteadyTimeSource clock;
  EXPECT_THROW(measure_python_in_worker(options("builtin:mlp", "threads=1"), run(), clock),
               UsageError);
}

}  // namespace torchperf
