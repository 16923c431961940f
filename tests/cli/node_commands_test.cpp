// The hidden modes a cluster's node runs (apps/torchperf/node_commands.cpp), as a Ray task runs
// them: a job on stdin, one JSON line on stdout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/cluster/node_job.h"
#include "torchperf/worker/protocol.h"

namespace torchperf {

using testing::run_shell;

TEST(NodeCommandsTest, ANodeJobReadsItsJobOnStdinAndPrintsItsOutcomeAsOneLine) {
  NodeJob job;
  job.kind = NodeJobKind::kWorker;
  job.executable = TORCHPERF_TEST_CLI;
  job.log_dir = ::testing::TempDir() + "torchperf-node-commands";
  job.log_name = "describe";
  job.workload.model = "builtin:mlp";
  job.request = to_request(DescribeRequest{job.workload});
  const auto run = run_shell("printf '%s' '" + to_json(job).dump() + "' | \"$TORCHPERF\" __node-job");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const WorkerOutcome out = worker_outcome_from_json(nlohmann::json::parse(run.out));
  ASSERT_EQ(out.ending, Ending::kAnswered) << out.message;
  EXPECT_TRUE(out.response.value("ok", false)) << out.response.dump();
}

TEST(NodeCommandsTest, AJobThatDoesNotReadIsRefusedWithItsReason) {
  const auto run = run_shell("echo '{\"kind\": 3}' | \"$TORCHPERF\" __node-job");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("torchperf __node-job: the job does not read"), std::string::npos)
      << run.err;
}

TEST(NodeCommandsTest, TheProbePrintsTheEnvironmentAndThePathsItCannotRead) {
  const auto run = run_shell("\"$TORCHPERF\" __node-probe /tmp /nonexistent/model.pt2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto probe = nlohmann::json::parse(run.out);
  EXPECT_EQ(probe.at("missing"), nlohmann::json::array({"/nonexistent/model.pt2"}));
  EXPECT_TRUE(probe.at("environment").contains("cpu_model"));
}

}  // namespace torchperf
