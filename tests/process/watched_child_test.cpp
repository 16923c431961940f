// The one child watcher: output read as it comes, the child held to its bounds even while it
// writes, an answer waited for with the child left running.
#include "torchperf/process/watched_child.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace torchperf {
namespace {

ChildSpec sh_child(const std::string& script, bool piped_input = false) {
  ChildSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", script};
  spec.pipe_stdout = true;
  spec.pipe_stdin = piped_input;
  spec.log_path = (std::filesystem::temp_directory_path() /
                   ("torchperf-watched-child-" + std::to_string(::getpid()) + ".log"))
                      .string();
  return spec;
}

}  // namespace

TEST(WatchedChildTest, AChildThatNeverStopsWritingIsStillStoppedAtItsTimeLimit) {
  WatchedChild child(sh_child("while :; do echo yes; done"));
  WatchLimits limits;
  limits.time_limit_s = 0.5;
  std::string out;
  const Watch w = child.watch(out, limits);
  EXPECT_EQ(w.end, Ending::kTimedOut);
  EXPECT_LT(w.elapsed_s, 5.0);
  EXPECT_FALSE(out.empty());
  EXPECT_FALSE(child.running());
}

TEST(WatchedChildTest, AnAnswerIsWaitedForAndTheChildKeepsRunningForTheNext) {
  WatchedChild child(sh_child("while read line; do echo \"got $line\"; done", true));
  const auto line_in = [](const std::string& b) { return b.find('\n') != std::string::npos; };
  std::string out;
  ASSERT_TRUE(child.write("one\n"));
  EXPECT_EQ(child.watch(out, {}, line_in).end, Ending::kAnswered);
  EXPECT_EQ(out, "got one\n");
  EXPECT_TRUE(child.running());
  child.close_input();  // the end of its input: it exits by itself
  out.clear();
  EXPECT_EQ(child.watch(out, {}, line_in).end, Ending::kCrashed);
  EXPECT_FALSE(child.running());
}

TEST(WatchedChildTest, KeepGoingFalseStopsItAndSaysSo) {
  WatchedChild child(sh_child("sleep 30"));
  WatchLimits limits;
  limits.keep_going = [](double elapsed_s) { return elapsed_s < 0.2; };
  std::string out;
  EXPECT_EQ(child.watch(out, limits).end, Ending::kStopped);
  EXPECT_FALSE(child.running());
}

}  // namespace torchperf
