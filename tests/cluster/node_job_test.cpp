#include "torchperf/cluster/node_job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "test_paths.h"
#include "torchperf/worker/protocol.h"

namespace torchperf {

namespace {

class NodeJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-nodejob-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  NodeJob job(NodeJobKind kind) const {
    NodeJob j;
    j.kind = kind;
    j.executable = TORCHPERF_TEST_CLI;
    j.log_dir = (dir_ / "workers").string();
    j.log_name = "point-x";
    j.limits = within(120, 0);
    j.workload.model = "builtin:mlp";
    j.workload.time_s = 0.2;
    return j;
  }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(NodeJobTest, AJobAndItsOutcomeReadBackAsTheyWereWritten) {
  NodeJob j = job(NodeJobKind::kCompare);
  j.environment = {{"OMP_WAIT_POLICY", "ACTIVE"}, {"LD_PRELOAD", ""}};
  j.request = {{"job", "measure"}};
  j.workload.reference_files = {{"8", "/runs/r/reference/batch-8.pt"}};
  j.configuration = "threads=1,batch=8";
  j.versus = "threads=1,batch=2";
  j.limits = within(42, 1 << 30);
  const nlohmann::json written = to_json(j);
  EXPECT_EQ(to_json(node_job_from_json(written)), written);

  WorkerOutcome o;
  o.ending = Ending::kTimedOut;
  o.message = "killed at the 42 s point timeout";
  o.wall_s = 42.5;
  o.peak_rss_bytes = 123456;
  const WorkerOutcome back = worker_outcome_from_json(to_json(o));
  EXPECT_EQ(back.ending, Ending::kTimedOut);
  EXPECT_EQ(back.message, o.message);
  EXPECT_EQ(back.wall_s, 42.5);
  EXPECT_EQ(back.peak_rss_bytes, 123456);
  EXPECT_THROW(node_job_from_json({{"kind", "slurm"}}), WorkerProtocolError);
  nlohmann::json no_limit = written;
  no_limit.erase("timeout_s");
  try {
    node_job_from_json(no_limit);
    ADD_FAILURE() << "a node job without its time limit was read";
  } catch (const WorkerProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("has no field 'timeout_s'"), std::string::npos) << e.what();
  }
}

TEST_F(NodeJobTest, AWorkerJobRunsItsRequestInAFreshWorkerWithItsLog) {
  NodeJob j = job(NodeJobKind::kWorker);
  BenchOptions w = j.workload;
  j.request = to_request(MeasureRequest{w, "threads=1,batch=2"});
  SteadyTimeSource clock;
  const WorkerOutcome out = run_node_job(j, clock);
  ASSERT_EQ(out.ending, Ending::kAnswered) << out.message;
  ASSERT_TRUE(out.response.value("ok", false)) << out.response.dump();
  EXPECT_GT(out.response["result"]["measurement"]["throughput_samples_per_s"].get<double>(), 0);
  EXPECT_GT(out.wall_s, 0);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "workers" / "point-x.log"));
}

TEST_F(NodeJobTest, AComparisonRunsBothSidesHereAndItsReplyReadsBackAsAComparison) {
  NodeJob j = job(NodeJobKind::kCompare);
  j.configuration = "threads=1,batch=8";
  j.versus = "threads=1,batch=1";
  j.workload.time_s = 0.8;  // windows of rounds long enough to read the machine's load in
  SteadyTimeSource clock;
  const WorkerOutcome out = run_node_job(j, clock);
  ASSERT_EQ(out.ending, Ending::kAnswered) << out.message;
  ASSERT_TRUE(out.response.value("ok", false)) << out.response.dump();
  const BenchResult r = from_reply<MeasureReply>(out.response, "compare").result;
  ASSERT_TRUE(r.comparison.has_value());
  EXPECT_GT(r.comparison->speedup.rounds, 0u);
  EXPECT_GT(r.comparison->speedup.ratio, 0);
  EXPECT_EQ(r.comparison->a.batch, 8);
  EXPECT_EQ(r.comparison->b.batch, 1);
  // Other work read between its rounds, a window at a time, travels with the reply (a pair this
  // far apart decides after its fourth round, which may all fall in one window).
  ASSERT_TRUE(r.comparison->round_load.has_value());
  EXPECT_GE(r.comparison->round_load->windows, 1u);
  EXPECT_LE(r.comparison->round_load->busy_windows, r.comparison->round_load->windows);
}

TEST_F(NodeJobTest, AnInterruptedJobSaysSoAndAFailedOneKeepsItsKind) {
  NodeJob j = job(NodeJobKind::kWorker);
  j.request = to_request(MeasureRequest{j.workload, "threads=1"});
  SteadyTimeSource clock;
  const WorkerOutcome stopped = run_node_job(j, clock, [](double) { return false; });
  EXPECT_EQ(stopped.ending, Ending::kStopped);

  NodeJob bad = job(NodeJobKind::kCompare);
  bad.configuration = "threads=1";
  bad.versus = "precision=fp8";
  const WorkerOutcome refused = run_node_job(bad, clock);
  ASSERT_EQ(refused.ending, Ending::kAnswered);
  EXPECT_FALSE(refused.response.value("ok", true));
  EXPECT_EQ(refused.response["error"].value("kind", ""), "config") << refused.response.dump();
}

TEST_F(NodeJobTest, TheProbeNamesThePathsThisMachineCannotRead) {
  const nlohmann::json probe = probe_node({dir_.string(), "/nonexistent/model.pt2"});
  EXPECT_EQ(probe.at("missing"), nlohmann::json::array({"/nonexistent/model.pt2"}));
  EXPECT_FALSE(probe.at("environment").value("cpu_model", "").empty()) << probe.dump();
}

}  // namespace torchperf
