// Two-process comparisons and fresh-process measurements against real workers (the test build of
// the worker): each side keeps its own process state, and a side that fails is named.
#include "torchperf/worker/paired_workers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "test_paths.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

class PairedWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-pw-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("TORCHPERF_TEST_FAULT", "crash@precision=bf16", 1);
  }
  void TearDown() override {
    ::unsetenv("TORCHPERF_TEST_FAULT");
    std::filesystem::remove_all(dir_);
  }
  WorkerRun run() const {
    WorkerRun r;
    r.executable = TORCHPERF_TEST_FAULTY_WORKER;
    r.log_dir = dir_.string();
    r.limits.time_limit_s = 60;
    return r;
  }
  static BenchOptions mlp(const std::string& a, const std::string& b) {
    BenchOptions o;
    o.model = "builtin:mlp";
    o.time_s = 0.4;
    o.config = Configuration::parse(a);
    o.vs = Configuration::parse(b);
    return o;
  }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(PairedWorkersTest, SidesThatDifferInThreadsEachKeepTheirOwnProcessState) {
  SteadyTimeSource clock;
  const BenchResult r = compare_in_workers(mlp("threads=1,batch=4", "threads=2"), run(), clock);
  ASSERT_TRUE(r.comparison);
  const Comparison& c = *r.comparison;
  EXPECT_TRUE(c.separate_processes);
  EXPECT_EQ(c.a.configuration.value("threads"), "1");
  EXPECT_EQ(c.b.configuration.value("threads"), "2");
  EXPECT_EQ(c.b.batch, 4) << "the workload's batch is shared";
  EXPECT_EQ(c.a.samples.iteration_ns.size(), c.b.samples.iteration_ns.size());
  // Enough rounds for an interval; how many more fit in the time depends on the machine's load.
  EXPECT_GE(c.speedup.rounds, kMinRatioRounds);
  EXPECT_FALSE(std::isnan(c.speedup.interval.low));
  EXPECT_GT(c.speedup.ratio, 0);
  EXPECT_NE(c.verdict, Verdict::kUndetermined);
  EXPECT_EQ(c.a.process.at("allocator"), "glibc");
}

TEST_F(PairedWorkersTest, AFreshWorkerRunsWithItsAllocatorAndSaysSo) {
  BenchOptions o = mlp("allocator=glibc-tuned", "");
  o.vs.reset();
  const BenchResult r = measure_in_worker(o, run());
  ASSERT_TRUE(r.measurement);
  EXPECT_EQ(r.measurement->process.at("allocator").rfind("glibc-tuned", 0), 0u);
  EXPECT_EQ(r.environment.variables.at("MALLOC_MMAP_THRESHOLD_"), "33554432")
      << "the environment recorded is the worker's";
}

TEST_F(PairedWorkersTest, ASideWhoseWorkerCrashesIsNamedWithItsLog) {
  SteadyTimeSource clock;
  try {
    compare_in_workers(mlp("precision=bf16", "threads=2"), run(), clock);
    FAIL() << "side a crashes";
  } catch (const RuntimeFailure& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("side a (precision=bf16)"), std::string::npos) << message;
    EXPECT_NE(message.find("SIGABRT"), std::string::npos) << message;
    EXPECT_NE(message.find("side-a.log"), std::string::npos) << message;
  }
}

TEST_F(PairedWorkersTest, AnErrorTheWorkerAnswersKeepsItsKind) {
  SteadyTimeSource clock;
  BenchOptions o = mlp("threads=1", "threads=2");
  o.input_spec = "3x5";  // the MLP takes 784 features
  EXPECT_THROW(compare_in_workers(o, run(), clock), WorkloadError);
}

TEST_F(PairedWorkersTest, OpenMpVariablesReachTheSideThatAskedForThem) {
  SteadyTimeSource clock;
  const BenchResult r =
      compare_in_workers(mlp("omp_wait=passive", "omp_wait=active"), run(), clock);
  EXPECT_EQ(r.comparison->a.process.at("omp_wait"), "passive (OMP_WAIT_POLICY=PASSIVE)");
  EXPECT_EQ(r.comparison->b.process.at("omp_wait"), "active (OMP_WAIT_POLICY=ACTIVE)");
}

}  // namespace torchperf
