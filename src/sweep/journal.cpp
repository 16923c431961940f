#include "torchperf/sweep/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "torchperf/error.h"
#include "torchperf/json_fields.h"

namespace torchperf {
namespace {

struct Parsed {
  std::vector<nlohmann::json> records;
  std::size_t truncated = 0;
  std::uintmax_t good_bytes = 0;  // the length of the file up to the last complete record
};

Parsed parse_file(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw ResultsError("no journal at '" + path + "' (expected the results of an earlier tune)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ResultsError("journal '" + path + "' cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  Parsed p;
  std::size_t start = 0, line_no = 0;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    const bool complete = nl != std::string::npos;
    const std::string line = text.substr(start, complete ? nl - start : std::string::npos);
    ++line_no;
    try {
      if (!complete) throw std::runtime_error("no end of line");
      p.records.push_back(nlohmann::json::parse(line));
      p.good_bytes = nl + 1;
    } catch (const std::exception&) {
      // Only the last line can be a write cut short by a crash; anything else is damage.
      const bool last = !complete || nl + 1 >= text.size();
      if (!last)
        throw ResultsError("journal '" + path + "' line " + std::to_string(line_no) +
                         " is not a JSON record: the file is damaged (expected one JSON object "
                         "per line)");
      ++p.truncated;
    }
    start = complete ? nl + 1 : text.size();
  }
  if (p.records.empty() && p.truncated)
    throw ResultsError("journal '" + path +
                       "' holds only a cut-short line: the run stopped while writing its header");
  if (p.records.empty())
    throw ResultsError("journal '" + path + "' is empty: expected a torchperf tune results file");
  const auto& h = p.records.front();
  // A foreign file's fields may have any type: look before reading.
  if (string_field(h, "record") != "header" || string_field(h, "tool") != "torchperf tune")
    throw ResultsError("journal '" + path +
                     "' does not start with a torchperf tune header: not a results file");
  const int version = integer_field(h, "schema_version");
  if (version != kJournalSchemaVersion)
    throw ResultsError("journal '" + path + "' has schema version " + std::to_string(version) +
                       "; this torchperf reads " + std::to_string(kJournalSchemaVersion));
  return p;
}

void write_line(std::FILE* file, const nlohmann::json& record, const std::string& path) {
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file) != line.size() || std::fflush(file) != 0)
    throw RuntimeFailure("could not write to the journal '" + path + "'");
  // A reboot must not lose a finished point: sync each record to the disk. (File systems that
  // cannot sync, EINVAL, have nothing to lose it to.)
  if (::fdatasync(fileno(file)) != 0 && errno != EINVAL && errno != EROFS)
    throw RuntimeFailure("could not sync the journal '" + path +
                         "' to disk: " + std::strerror(errno));
}

}  // namespace

Journal::Journal(std::string path, std::FILE* file, std::vector<nlohmann::json> records,
                 std::size_t truncated)
    : path_(std::move(path)), file_(file), records_(std::move(records)), truncated_(truncated) {}

Journal::Journal(Journal&& other) noexcept
    : path_(std::move(other.path_)),
      file_(other.file_),
      records_(std::move(other.records_)),
      truncated_(other.truncated_) {
  other.file_ = nullptr;
}

Journal::~Journal() {
  if (file_) std::fclose(file_);
}

void Journal::refuse_existing(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0)
    throw UsageError("'" + path +
                     "' already holds a journal: continue it with --resume, or choose another "
                     "--out");
}

Journal Journal::create(const std::string& path, const nlohmann::json& header) {
  refuse_existing(path);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (!file) throw UsageError("cannot create the journal '" + path + "'");
  Journal j(path, file, {header}, 0);
  write_line(file, header, path);
  // The new file's name must survive a reboot too: sync its directory once.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return j;
}

std::vector<nlohmann::json> Journal::read(const std::string& path, std::size_t* truncated) {
  Parsed p = parse_file(path);
  if (truncated) *truncated = p.truncated;
  return std::move(p.records);
}

Journal Journal::reopen(const std::string& path,
                        const std::function<void(const nlohmann::json&)>& check) {
  Parsed p = parse_file(path);
  if (check) check(p.records.front());
  if (p.truncated) std::filesystem::resize_file(path, p.good_bytes);  // drop the cut-short record
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (!file) throw UsageError("cannot append to the journal '" + path + "'");
  return Journal(path, file, std::move(p.records), p.truncated);
}

void Journal::append(const nlohmann::json& record) {
  write_line(file_, record, path_);
  records_.push_back(record);
}

}  // namespace torchperf
