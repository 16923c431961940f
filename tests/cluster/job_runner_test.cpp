#include "torchperf/cluster/job_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "test_paths.h"
#include "torchperf/worker/protocol.h"

namespace torchperf {

namespace {

class LocalJobRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-runner-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // A brief (shareable) or full measure of the built-in MLP.
  NodeJob measure(const std::string& config, bool shared) const {
    NodeJob j;
    j.kind = NodeJobKind::kWorker;
    j.executable = TORCHPERF_TEST_CLI;
    j.log_dir = (dir_ / "workers").string();
    j.log_name = "point-" + std::to_string(shared);
    j.limits = within(120, 0);
    BenchOptions w;
    w.model = "builtin:mlp";
    w.time_s = 0.1;
    j.request = to_request(MeasureRequest{w, config});
    j.configuration = config;
    j.shared = shared;
    return j;
  }
  LocalJobRunner runner(JobTick tick = [](double) { return true; }) {
    return LocalJobRunner(clock_, TORCHPERF_TEST_CLI, (dir_ / "workers").string(), within(120, 0),
                          std::move(tick));
  }
  SteadyTimeSource clock_;
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(LocalJobRunnerTest, OneSlotRunsItsJobOnWaitAndSaysWhichMachineClassMeasuredIt) {
  LocalJobRunner here = runner();
  EXPECT_EQ(here.slots(), 1u);
  EXPECT_FALSE(here.machines().machine_class.empty());
  EXPECT_TRUE(here.machines().record.is_null()) << "no cluster";
  const std::string ticket = here.start(measure("threads=1,batch=2", false));
  EXPECT_EQ(here.idle(), 0u);
  const std::vector<JobEnd> ended = here.wait(0.1);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].ticket, ticket);
  EXPECT_EQ(ended[0].outcome.ending, Ending::kAnswered) << ended[0].outcome.message;
  EXPECT_FALSE(ended[0].shared_worker);
  EXPECT_EQ(here.idle(), 1u);
  EXPECT_TRUE(here.wait(0.1).empty());
}

TEST_F(LocalJobRunnerTest, BriefPointsOfOneProcessStateShareAWorkerAndAFullOneHasItsOwn) {
  LocalJobRunner here = runner();
  const JobEnd first = here.run(measure("threads=1,batch=2", true));
  const JobEnd second = here.run(measure("threads=1,batch=4", true));
  ASSERT_EQ(second.outcome.ending, Ending::kAnswered) << second.outcome.message;
  EXPECT_TRUE(first.shared_worker && second.shared_worker);
  EXPECT_TRUE(first.fresh_worker);
  EXPECT_FALSE(second.fresh_worker) << "the second found the first one's worker warm";
  const JobEnd full = here.run(measure("threads=1,batch=2", false));
  EXPECT_FALSE(full.shared_worker);
  EXPECT_EQ(here.shared_workers_started(), 1u);
}

TEST_F(LocalJobRunnerTest, ATickThatSaysStopEndsTheJobAsStopped) {
  LocalJobRunner here = runner([](double) { return false; });
  const JobEnd end = here.run(measure("threads=1,batch=2", false));
  EXPECT_EQ(end.outcome.ending, Ending::kStopped);
}

}  // namespace torchperf
