// OUT/results.jsonl: the experiment's append-only record, one JSON object per line, flushed and
// synced as each point finishes, so that nothing measured is lost to a crash, a kill or a reboot.
// Its schema is documented in docs/results-schema.md; `report` reads it.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace torchperf {

inline constexpr int kJournalSchemaVersion = 1;

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

  void append(const nlohmann::json& record);
  const nlohmann::json& header() const { return records_.front(); }
  const std::vector<nlohmann::json>& records() const { return records_; }
  std::size_t truncated_lines() const { return truncated_; }
  const std::string& path() const { return path_; }

 private:
  Journal(std::string path, std::FILE* file, std::vector<nlohmann::json> records,
          std::size_t truncated);
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<nlohmann::json> records_;
  std::size_t truncated_ = 0;
};

}  // namespace torchperf
