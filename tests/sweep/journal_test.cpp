#include "torchperf/sweep/journal.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "torchperf/error.h"

namespace torchperf {
namespace {

nlohmann::json header() {
  return {{"record", "header"}, {"tool", "torchperf tune"}, {"schema_version", kJournalSchemaVersion}};
}

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("torchperf-journal-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    path_ = (dir_ / "results.jsonl").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& text) {
    std::filesystem::create_directories(dir_);
    std::ofstream(path_) << text;
  }
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace

TEST_F(JournalTest, RecordsSurviveAndAreReadBackInOrder) {
  {
    Journal j = Journal::create(path_, header());
    j.append({{"record", "point"}, {"key", "a"}});
    j.append({{"record", "point"}, {"key", "b"}});
  }
  Journal j = Journal::reopen(path_);
  ASSERT_EQ(j.records().size(), 3u);
  EXPECT_EQ(j.records()[2]["key"], "b");
  EXPECT_EQ(j.truncated_lines(), 0u);
  j.append({{"record", "point"}, {"key", "c"}});
  EXPECT_EQ(Journal::read(path_).size(), 4u);
}

TEST_F(JournalTest, CreatingOverAnExistingJournalIsRefused) {
  { Journal::create(path_, header()); }
  try {
    Journal::create(path_, header());
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--resume"), std::string::npos) << e.what();
  }
}

TEST_F(JournalTest, ATruncatedLastLineIsDroppedFromTheFileAndCounted) {
  write(header().dump() + "\n{\"record\":\"point\",\"key\":\"a\"}\n{\"record\":\"point\",\"ke");
  {
    Journal j = Journal::reopen(path_);
    EXPECT_EQ(j.records().size(), 2u);
    EXPECT_EQ(j.truncated_lines(), 1u);
    j.append({{"record", "point"}, {"key", "b"}});
  }
  std::size_t truncated = 9;
  const auto records = Journal::read(path_, &truncated);
  EXPECT_EQ(truncated, 0u) << "the cut-short line is gone, the new record follows a clean line";
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2]["key"], "b");
}

TEST_F(JournalTest, DamageBeforeTheLastLineIsAnErrorNamingTheLine) {
  write(header().dump() + "\nnot json\n{\"record\":\"point\"}\n");
  try {
    Journal::reopen(path_);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST_F(JournalTest, AFileThatIsNotATuneJournalIsRefused) {
  write("{\"schema_version\":1,\"kind\":\"measurement\"}\n");
  EXPECT_THROW(Journal::reopen(path_), UsageError);
  write("");
  EXPECT_THROW(Journal::reopen(path_), UsageError);
  auto h = header();
  h["schema_version"] = 99;
  write(h.dump() + "\n");
  EXPECT_THROW(Journal::reopen(path_), UsageError);
  EXPECT_THROW(Journal::reopen((dir_ / "missing.jsonl").string()), UsageError);
}

}  // namespace torchperf

namespace torchperf {

TEST_F(JournalTest, AFolderHasOneWriterAndKillNineLeavesNoStaleLock) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    JournalLock lock = JournalLock::acquire(dir_.string());
    const char byte = 1;
    [[maybe_unused]] auto n = ::write(ready[1], &byte, 1);
    ::pause();  // until killed
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_EQ(JournalLock::holder(dir_.string()), std::optional<long>(holder));
  try {
    JournalLock::acquire(dir_.string());
    ADD_FAILURE() << "a second writer got the folder";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("in use by another tune (PID " + std::to_string(holder) +
                                         ")"),
              std::string::npos)
        << e.what();
  }
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  EXPECT_EQ(JournalLock::holder(dir_.string()), std::nullopt);
  JournalLock mine = JournalLock::acquire(dir_.string());
  // Our own lock is not dropped when another descriptor of the file closes (a report reading).
  EXPECT_EQ(JournalLock::holder(dir_.string()), std::optional<long>(getpid()));
  EXPECT_EQ(JournalLock::holder(dir_.string()), std::optional<long>(getpid()));
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace torchperf
