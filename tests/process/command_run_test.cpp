#include "torchperf/process/command_run.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace torchperf {
namespace {

ChildSpec shell(const std::string& script) {
  ChildSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", script};
  spec.log_path = (std::filesystem::temp_directory_path() /
                   ("torchperf-command-run-" + std::to_string(::getpid()) + ".log"))
                      .string();
  return spec;
}

}  // namespace

TEST(CommandRunTest, ReturnsWhatTheChildPrintedItsExitCodeAndTheLastLineOfItsLog) {
  const CommandResult r =
      run_command(shell("echo '{\"a\": 1}'; echo first >&2; echo 'the last line' >&2; exit 6"), {});
  EXPECT_EQ(r.exit_code, 6);
  EXPECT_EQ(r.out, "{\"a\": 1}\n");
  EXPECT_EQ(r.last_error, "the last line");
  EXPECT_FALSE(r.succeeded());
  EXPECT_TRUE(run_command(shell("true"), {}).succeeded());
}

TEST(CommandRunTest, StopsAChildAndWhatItStartedAtTheTimeLimit) {
  CommandLimits limits;
  limits.time_limit_s = 0.3;
  // The child's own child (a compiler, for the Python side) is in its process group.
  const CommandResult r = run_command(shell("sleep 30 & sleep 30; wait"), limits);
  EXPECT_EQ(r.ending, Ending::kTimedOut);
  EXPECT_FALSE(r.succeeded());
  EXPECT_LT(r.wall_s, 5.0);
  EXPECT_EQ(r.signal, SIGKILL);
}

TEST(CommandRunTest, StopsAChildOverItsMemoryCap) {
  CommandLimits limits;
  limits.memory_cap_bytes = 64LL << 20;
  limits.time_limit_s = 20;
  // python3 holds 400 MB of touched memory, then sleeps.
  const CommandResult r = run_command(
      shell("exec python3 -c 'import time; b = bytearray(400 << 20); time.sleep(30)'"), limits);
  EXPECT_EQ(r.ending, Ending::kOutOfMemory);
  EXPECT_GT(r.peak_rss_bytes, limits.memory_cap_bytes);
}

TEST(CommandRunTest, StopsWhenAskedTo) {
  CommandLimits limits;
  int polls = 0;
  limits.keep_going = [&](double) { return ++polls <= 3; };
  const CommandResult r = run_command(shell("sleep 30"), limits);
  EXPECT_EQ(r.ending, Ending::kStopped);
  EXPECT_FALSE(r.succeeded());
}

}  // namespace torchperf
