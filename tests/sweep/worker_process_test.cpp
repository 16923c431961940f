// The supervisor side of isolation, against real worker processes (the fault-injecting test build
// of the worker): an answer, a crash, a hang and a memory blow-up each end as they should.
#include "torchperf/sweep/worker_process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "test_paths.h"
#include "torchperf/sweep/worker.h"

namespace torchperf {
namespace {

class WorkerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-wp-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("TORCHPERF_TEST_FAULT", "crash@precision=bf16;hang@grad=inference;oom@grad=no_grad", 1);
  }
  void TearDown() override {
    ::unsetenv("TORCHPERF_TEST_FAULT");
    std::filesystem::remove_all(dir_);
  }
  nlohmann::json measure(const std::string& config) {
    BenchOptions o;
    o.model = "builtin:mlp";
    o.time_s = 0.1;
    return {{"job", "measure"}, {"workload", to_json(o)}, {"configuration", config}};
  }
  std::string log() const { return (dir_ / "worker.log").string(); }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(WorkerProcessTest, AWorkerAnswersItsJobOnThePipe) {
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("grad=on"), {60, 0}, log());
  ASSERT_EQ(out.exit, WorkerExit::kAnswered) << out.message;
  ASSERT_TRUE(out.response.value("ok", false)) << out.response.dump();
  EXPECT_GT(out.response["result"]["measurement"]["throughput_samples_per_s"].get<double>(), 0);
  EXPECT_GT(out.peak_rss_bytes, 0);
}

TEST_F(WorkerProcessTest, ACrashCostsTheJobOnlyAndIsNamedWithItsSignal) {
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("precision=bf16"), {60, 0}, log());
  EXPECT_EQ(out.exit, WorkerExit::kCrashed);
  EXPECT_NE(out.message.find("SIGABRT"), std::string::npos) << out.message;
}

TEST_F(WorkerProcessTest, AHangIsKilledAtTheTimeLimit) {
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("grad=inference"), {3, 0}, log());
  EXPECT_EQ(out.exit, WorkerExit::kTimedOut);
  EXPECT_NE(out.message.find("3 s point timeout"), std::string::npos) << out.message;
  EXPECT_GE(out.wall_s, 3);
  EXPECT_LT(out.wall_s, 30);
}

TEST_F(WorkerProcessTest, AMemoryBlowUpIsKilledAtTheCap) {
  const std::int64_t cap = 2048LL << 20;
  const WorkerOutcome out =
      run_worker_process(TORCHPERF_TEST_FAULTY_WORKER, measure("grad=no_grad"), {60, cap}, log());
  EXPECT_EQ(out.exit, WorkerExit::kOutOfMemory);
  EXPECT_NE(out.message.find("memory cap of 2048 MiB"), std::string::npos) << out.message;
  EXPECT_GT(out.peak_rss_bytes, cap);
}

TEST_F(WorkerProcessTest, AnInterruptionStopsTheWorker) {
  const WorkerOutcome out = run_worker_process(TORCHPERF_TEST_FAULTY_WORKER,
                                               measure("grad=inference"), {60, 0}, log(),
                                               [](double t) { return t < 1; });
  EXPECT_EQ(out.exit, WorkerExit::kCrashed);
  EXPECT_EQ(out.message, "interrupted");
}

TEST_F(WorkerProcessTest, AMissingExecutableIsReportedNotThrown) {
  const WorkerOutcome out =
      run_worker_process((dir_ / "nope").string(), measure("grad=on"), {10, 0}, log());
  EXPECT_EQ(out.exit, WorkerExit::kCrashed);
  EXPECT_NE(out.message.find("could not be started"), std::string::npos) << out.message;
}

}  // namespace torchperf
