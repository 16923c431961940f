// `train --nproc N`: real ranks under torch's launcher (gloo on this CPU), driven by the real CLI:
// the ladder over DDP's knobs on a built-in and on a --from-python model, two launchers meeting at
// one rendezvous on loopback, and each fault a DDP job meets.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "support/test_support.h"
#include "test_paths.h"

namespace torchperf {
namespace {

using testing::run_shell;

// The models of tests/python/rank_models.py, and their data: 64 features, 10 classes.
class TrainRanksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-ranks-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    const auto r = run_shell(std::string("\"") + TORCHPERF_TEST_PYTHON +
                             "\" -c 'import torch; torch.save((torch.randn(512, 64), "
                             "torch.randint(0, 10, (512,))), \"" + (dir_ / "v.pt").string() +
                             "\"); torch.save((torch.randn(512, 784), torch.randint(0, 10, "
                             "(512,))), \"" + (dir_ / "v784.pt").string() + "\")'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  // A shell line that runs torchperf train on a model of rank_models.py (the modules' folder on
  // the path, as --from-python finds a user's), on its data.
  static std::string train(const std::string& model, const std::string& more) {
    return std::string("cd ") + TORCHPERF_TEST_SOURCE_DIR + "/tests/python && \"$TORCHPERF\" train "
           "--from-python rank_models:" + model + " --data tensors:" + (dir_ / "v.pt").string() +
           " --batch 8 --steps 3 --warmup 1 --quiet " + more;
  }
  static int free_port() {
    std::mt19937 random(static_cast<unsigned>(getpid()));
    return 20000 + static_cast<int>(random() % 20000);
  }
  static std::filesystem::path dir_;
};
std::filesystem::path TrainRanksTest::dir_;

TEST_F(TrainRanksTest, TheLadderOverTwoRanksTriesDdpsKnobsAndBreaksEachRankDown) {
  // A budget of 20 s: the climb starts each change's comparison within it (the first advised
  // is a DDP knob where the all-reduce shows).
  const auto r = run_shell(train("Blocks", "--nproc 2 --accumulate 2 --ladder --max-rungs 1 "
                                           "--rounds 4 --max-rounds 4 --block-steps 2 "
                                           "--budget 20 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& first = j["ladder"]["rungs"][0]["breakdown"];
  ASSERT_EQ(first["ranks"].size(), 2u);
  for (const auto& rank : first["ranks"]) {
    EXPECT_GT(rank["step_ms"].get<double>(), 0);
    EXPECT_GE(rank["phases_ms"]["all_reduce"].get<double>(), 0);
    EXPECT_GT(rank["peak_memory_bytes"].get<std::int64_t>(), 0);
  }
  EXPECT_GE(first["straggler_gap_ms"].get<double>(), 0);
  // Two ranks of 2 x 8 samples per optimizer step.
  EXPECT_GT(first["samples_per_second"].get<double>(), 0);
  bool ddp_tried = false;
  for (const auto& a : j["ladder"]["attempts"]) {
    const std::string change = a["change"];
    ddp_tried |= change.rfind("no_sync=", 0) == 0 || change.rfind("gradient_as_bucket_view", 0) == 0 ||
                 change.rfind("ddp_bucket_mb", 0) == 0 || change.rfind("static_graph", 0) == 0;
  }
  bool exposed = false;  // the all-reduce may hide behind backward on a quiet machine
  for (const auto& a : j["ladder"]["rungs"][0]["advice"]) exposed |= a["rule"] == "all-reduce";
  EXPECT_TRUE(ddp_tried || !exposed) << j["ladder"]["attempts"].dump();
  bool planned = false;
  for (const auto& n : j["notes"]) planned |= n.get<std::string>().find("rank(s) on this node") != std::string::npos;
  EXPECT_TRUE(planned) << j["notes"].dump();
}

TEST_F(TrainRanksTest, ALoopOverItsMemoryCapStartsTheLadderWithItsBlocksCheckpointed) {
  // The loop as given holds 1 GiB more than its checkpointed self (rank_models.py): over a cap
  // of 800 MiB as given, within it checkpointed. Checkpointing keeps what is learned: no leave.
  const auto r = run_shell(train("HeavyUnlessCheckpointed",
                                 "--memory-cap 800M --ladder --max-rungs 0 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& first = j["ladder"]["rungs"][0];
  EXPECT_EQ(first["change"], "checkpoint=blocks");
  EXPECT_NE(first["configuration"].get<std::string>().find("checkpoint=blocks"), std::string::npos);
  ASSERT_EQ(j["ladder"]["notes"].size(), 1u);
  const std::string note = j["ladder"]["notes"][0];
  EXPECT_NE(note.find("the loop as given went over the memory"), std::string::npos) << note;
  EXPECT_NE(note.find("800 MiB"), std::string::npos) << note;
  // Over the cap checkpointed too: exit 9, both peaks named.
  const auto heavy = run_shell(train("AlwaysHeavy", "--memory-cap 800M --ladder --max-rungs 0"));
  EXPECT_EQ(heavy.exit_code, 9) << heavy.err;
  EXPECT_NE(heavy.err.find("with checkpoint=blocks too:"), std::string::npos) << heavy.err;
}

TEST_F(TrainRanksTest, ABuiltInTrainsOverTwoRanksWithItsRanksTablePrinted) {
  const auto r = run_shell(std::string("\"$TORCHPERF\" train builtin:mlp --data tensors:") +
                           (dir_ / "v784.pt").string() + " --nproc 2 --batch 8 --steps 3 "
                           "--warmup 1 --ladder --max-rungs 1 --rounds 4 --max-rounds 4 "
                           "--block-steps 2 --budget 15 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 ranks; the step is the slowest rank's; straggler gap"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("all-reduce (exposed)"), std::string::npos);
  EXPECT_NE(r.out.find("rank  host"), std::string::npos);
}

TEST_F(TrainRanksTest, TwoLaunchersMeetAtOneRendezvousOnLoopbackAsTwoNodes) {
  // A port free when chosen may be taken before the store binds it (another test's standalone
  // rendezvous asks the system for any port): that race, said by name, is tried again.
  testing::CliRun r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string endpoint = "127.0.0.1:" + std::to_string(free_port());
    const std::string common =
        "--nproc 1 --nnodes 2 --rdzv-endpoint " + endpoint + " --join-timeout 60";
    r = run_shell(train("Blocks", common + " --node-rank 1 --json > " +
                                      (dir_ / "node1.json").string() + " 2>&1 &") +
                  "\n" + train("Blocks", common + " --node-rank 0 --json") +
                  "\ncode=$?; wait; exit $code");
    if (r.err.find("its port is in use by another program") == std::string::npos) break;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["breakdown"]["ranks"].size(), 2u);
  std::ifstream follower(dir_ / "node1.json");
  const std::string text((std::istreambuf_iterator<char>(follower)), {});
  EXPECT_NE(text.find("\"followed\": true"), std::string::npos) << text;
}

TEST_F(TrainRanksTest, ARankThatCrashesStopsTheRunInSecondsNamingTheRankAndItsLog) {
  const auto r = run_shell(train("CrashOnRank1", "--nproc 2"));
  EXPECT_EQ(r.exit_code, 11) << r.err;  // the cluster's kind: a rank killed by a signal
  EXPECT_NE(r.err.find("rank 1 was killed by SIGABRT"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank-1.log"), std::string::npos) << r.err;
  const auto raised = run_shell(train("RaiseOnRank1", "--nproc 2"));
  EXPECT_EQ(raised.exit_code, 5) << raised.err;  // its own error's kind: the workload
  EXPECT_NE(raised.err.find("rank 1 failed: "), std::string::npos) << raised.err;
}

TEST_F(TrainRanksTest, ARankStuckEndsTheOthersCollectiveAtItsTimeoutAndSaysSo) {
  const auto r = run_shell(train("HangOnRank1", "--nproc 2 --collective-timeout 3"));
  EXPECT_EQ(r.exit_code, 11) << r.err;
  EXPECT_NE(r.err.find("a collective timed out after 3 s waiting for the other ranks"),
            std::string::npos)
      << r.err;
}

TEST_F(TrainRanksTest, APortInUseAndANodeThatNeverJoinsAreClearErrors) {
  const int port = free_port() + 1;
  const auto busy = run_shell(
      std::string("\"") + TORCHPERF_TEST_PYTHON + "\" -c 'import socket,time; s=socket.socket(); "
      "s.bind((\"127.0.0.1\", " + std::to_string(port) + ")); s.listen(); time.sleep(60)' & "
      "sleep 1; " + train("Blocks", "--nproc 1 --nnodes 2 --rdzv-endpoint 127.0.0.1:" +
                                         std::to_string(port) + " --join-timeout 5") +
      "; code=$?; kill %1; exit $code");
  EXPECT_EQ(busy.exit_code, 11) << busy.err;
  EXPECT_NE(busy.err.find("its port is in use"), std::string::npos) << busy.err;
  const auto alone = run_shell(train("Blocks", "--nproc 1 --nnodes 2 --rdzv-endpoint 127.0.0.1:" +
                                                   std::to_string(port + 1) + " --join-timeout 3"));
  EXPECT_EQ(alone.exit_code, 11) << alone.err;
  EXPECT_NE(alone.err.find("did not all join within 3 s"), std::string::npos) << alone.err;
}

TEST_F(TrainRanksTest, MoreRanksThanCoresIsAWarning) {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const auto r = run_shell(train("Blocks", "--nproc " + std::to_string(cores + 1)) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ranks on " + std::to_string(cores) + " usable cores: they share cores"),
            std::string::npos)
      << r.out;
}

TEST_F(TrainRanksTest, AKilledTorchperfLeavesNoRankBehind) {
  // A marker in the environment every process below torchperf inherits: the ranks are found by it.
  const std::string mark = "TORCHPERF_RANKS_TEST=" + std::to_string(getpid());
  const auto r = run_shell(
      "export " + mark + "\n" + train("HangOnRank1", "--nproc 2 --collective-timeout 600") +
      " & tp=$!\n"
      "ranks() { for f in /proc/[0-9]*/environ; do p=${f#/proc/}; p=${p%/environ}; "
      "grep -qs '" + mark + "' $f || continue; tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null "
      "| grep -q 'torchperf.rank_group --rank' && echo $p; done; }\n"
      "for i in $(seq 100); do [ \"$(ranks | wc -l)\" -ge 2 ] && break; sleep 0.3; done\n"
      "[ \"$(ranks | wc -l)\" -ge 2 ] || { echo 'no ranks started' >&2; exit 3; }\n"
      "kill -9 $tp\n"
      "for i in $(seq 50); do [ -z \"$(ranks)\" ] && exit 0; sleep 0.2; done\n"
      "echo \"left behind: $(ranks)\" >&2; exit 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace torchperf
