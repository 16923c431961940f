// OUT/results.jsonl: the experiment's append-only record, one JSON object per line, flushed and
// synced as each point finishes, so that nothing measured is lost to a crash, a kill or a reboot.
// Its schema is documented in docs/results-schema.md; `report` reads it. A journal has one writer:
// JournalLock is that writer's claim on the folder.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace torchperf {

inline constexpr int kJournalSchemaVersion = 1;

// An exclusive lock on a run folder (OUT/tune.lock, which holds the holder's PID), held for the
// writer's whole run. It is an open-file-description lock: the kernel drops it when the process
// dies (kill -9 leaves no stale lock), a child started by exec does not inherit it, and closing
// another descriptor of the file in this process (a report read) does not release it.
class JournalLock {
 public:
  // Creates the folder if needed and takes the lock; a folder already held is a UsageError that
  // names the holder's PID.
  static JournalLock acquire(const std::string& dir);
  // The PID of the process holding the folder's lock, if one does (a run still going).
  static std::optional<long> holder(const std::string& dir);
  static std::string file_in(const std::string& dir);

  JournalLock(JournalLock&& other) noexcept;
  JournalLock& operator=(JournalLock&&) = delete;
  JournalLock(const JournalLock&) = delete;
  ~JournalLock();

 private:
  explicit JournalLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

class Journal {
 public:
  // Starts a journal with its header record; refuses (UsageError) when one is already there.
  static Journal create(const std::string& path, const nlohmann::json& header);
  // The refusal alone, so that a run can fail before its expensive start.
  static void refuse_existing(const std::string& path);
  // Reopens a journal for appending. A truncated last line (a write cut short) is dropped from
  // the file and counted; a malformed line elsewhere or a missing header is a UsageError.
  // check(header) runs first and may refuse the journal: the file is then left untouched.
  static Journal reopen(const std::string& path,
                        const std::function<void(const nlohmann::json&)>& check = nullptr);
  // Reads without opening for append (report).
  static std::vector<nlohmann::json> read(const std::string& path,
                                          std::size_t* truncated = nullptr);

  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&&) = delete;
  Journal(const Journal&) = delete;
  ~Journal();

  // Writes the record as one line, whole or not at all: a failed write (a full disk) is cut
  // back off the file before the error is thrown.
  void append(const nlohmann::json& record);
  const nlohmann::json& header() const { return records_.front(); }
  const std::vector<nlohmann::json>& records() const { return records_; }
  std::size_t truncated_lines() const { return truncated_; }
  const std::string& path() const { return path_; }

 private:
  Journal(std::string path, int fd, std::vector<nlohmann::json> records, std::size_t truncated);
  std::string path_;
  int fd_ = -1;
  std::vector<nlohmann::json> records_;
  std::size_t truncated_ = 0;
};

}  // namespace torchperf
