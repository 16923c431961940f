// The run's own temporary folder, made in forked children (each a fresh process, as each run is):
// private, one per process and per user, removed at exit unless kept.
#include "torchperf/process/scratch_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

namespace torchperf {
namespace {

namespace fs = std::filesystem;

class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("torchperf-scratch-test-" + std::to_string(::getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
    fs::permissions(tmp_, fs::perms::all | fs::perms::sticky_bit);  // as /tmp is: 1777
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // Runs body in a child process whose TMPDIR is tmp_, as user uid when given; returns what the
  // child wrote to its result file (its folder's path, or an error) and its exit status. The child
  // ends with exit(), so that what a process does at its end (removing the folder) happens.
  std::pair<std::string, int> in_child(const std::function<std::string()>& body, int uid = -1) {
    const fs::path result = tmp_ / ("result-" + std::to_string(counter_++));
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("TMPDIR", tmp_.c_str(), 1);
      if (uid >= 0 && (::setgid(uid) != 0 || ::setuid(uid) != 0)) ::_exit(90);
      std::string out;
      try {
        out = body();
      } catch (const std::exception& e) {
        out = std::string("error: ") + e.what();
      }
      std::ofstream(result) << out;
      std::exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::ifstream in(result);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return {text, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
  }

  static std::string made_and_written() {
    const fs::path dir = scratch_dir();
    std::ofstream(scratch_path("inputs.pt")) << "x";
    if (!fs::exists(dir / "inputs.pt")) return "error: cannot write in " + dir.string();
    struct stat st{};
    ::stat(dir.c_str(), &st);
    if ((st.st_mode & 0777) != 0700) return "error: mode " + std::to_string(st.st_mode & 0777);
    if (st.st_uid != ::getuid()) return "error: not owned by its user";
    return dir.string();
  }

  fs::path tmp_;
  int counter_ = 0;
};

TEST_F(ScratchDirTest, EachRunMakesAPrivateFolderOfItsOwnAndRemovesItAtExit) {
  const auto [first, status] = in_child(made_and_written);
  ASSERT_EQ(status, 0);
  ASSERT_EQ(first.rfind("error", 0), std::string::npos) << first;
  EXPECT_EQ(fs::path(first).parent_path(), tmp_);
  EXPECT_NE(fs::path(first).filename().string().find("torchperf-"), std::string::npos);
  EXPECT_FALSE(fs::exists(first)) << "removed when the run ended";
  const auto [second, status2] = in_child(made_and_written);
  EXPECT_NE(first, second);
}

TEST_F(ScratchDirTest, AFolderAnErrorNamedAFileInIsKept) {
  const auto [dir, status] = in_child([] {
    const std::string made = made_and_written();
    keep_scratch_dir();
    return made;
  });
  ASSERT_EQ(status, 0);
  ASSERT_EQ(dir.rfind("error", 0), std::string::npos) << dir;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "inputs.pt"));
}

TEST_F(ScratchDirTest, AnErrorThatNamesNoFileInItLeavesNothingBehind) {
  const auto [dir, status] = in_child([] {
    const std::string made = made_and_written();
    keep_scratch_dir_if_named("model.pt2: not a torch.export program (expected ...)");
    return made;
  });
  ASSERT_EQ(status, 0);
  ASSERT_EQ(dir.rfind("error", 0), std::string::npos) << dir;
  EXPECT_FALSE(fs::exists(dir)) << "no message named it";
  const auto [named, status2] = in_child([] {
    const std::string made = made_and_written();
    keep_scratch_dir_if_named("the export crashed; its log: " + scratch_path("export-0.log"));
    return made;
  });
  ASSERT_EQ(status2, 0);
  EXPECT_TRUE(fs::exists(fs::path(named) / "inputs.pt")) << "the message named a file in it";
}

TEST_F(ScratchDirTest, ASecondUserWorksBesideTheFirstUsersFolders) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as a second user";
  // The first user's folders, kept and private, and the fixed folder torchperf used to share.
  const auto [theirs, status] = in_child([] {
    const std::string made = made_and_written();
    keep_scratch_dir();
    return made;
  });
  ASSERT_EQ(status, 0);
  fs::create_directories(tmp_ / "torchperf-python");
  fs::permissions(tmp_ / "torchperf-python", fs::perms::owner_all);
  const int nobody = 65534;
  const auto [mine, status2] = in_child(made_and_written, nobody);
  ASSERT_EQ(status2, 0);
  EXPECT_EQ(mine.rfind("error", 0), std::string::npos) << mine;
  EXPECT_NE(mine, theirs);
}

}  // namespace
}  // namespace torchperf
