#include "torchperf/sweep/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
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

std::string errno_text() { return std::strerror(errno); }

// One write(2) of the whole line on an O_APPEND descriptor; a short or failed write is cut back
// off, so that the file never holds a partial record written by this process.
void write_line(int fd, const nlohmann::json& record, const std::string& path) {
  const std::string line = record.dump() + "\n";
  const off_t before = ::lseek(fd, 0, SEEK_END);
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? errno_text() : "nothing written";
      if (before >= 0 && ::ftruncate(fd, before) != 0) {
        // The cut-short line stays; a reader drops it as a write cut short.
      }
      throw RuntimeFailure("could not write to the journal '" + path + "': " + why +
                           " (the record was not kept; the journal is whole up to it)");
    }
    written += static_cast<std::size_t>(n);
  }
  // A reboot must not lose a finished point: sync each record to the disk. (File systems that
  // cannot sync, EINVAL, have nothing to lose it to.)
  if (::fdatasync(fd) != 0 && errno != EINVAL && errno != EROFS)
    throw RuntimeFailure("could not sync the journal '" + path + "' to disk: " + errno_text());
}

int open_for_append(const std::string& path, int extra_flags) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | extra_flags, 0644);
  if (fd < 0)
    throw UsageError("cannot " + std::string(extra_flags & O_CREAT ? "create" : "append to") +
                     " the journal '" + path + "': " + errno_text());
  return fd;
}

long read_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

}  // namespace

std::string JournalLock::file_in(const std::string& dir) {
  return (std::filesystem::path(dir) / "tune.lock").string();
}

JournalLock JournalLock::acquire(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw UsageError("--out '" + dir + "': cannot create the folder: " + ec.message());
  const std::string path = file_in(dir);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UsageError("--out '" + dir + "': cannot write in the folder: " + errno_text());
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &lock) != 0) {
    const int err = errno;
    const long pid = read_pid(fd);
    ::close(fd);
    if (err == EAGAIN || err == EACCES)
      throw UsageError("'" + dir + "' is in use by another tune (PID " +
                       (pid > 0 ? std::to_string(pid) : std::string("unknown")) +
                       "): a run folder has one writer; wait for it to finish, or stop it and "
                       "continue with --resume");
    throw UsageError("--out '" + dir + "': cannot lock the folder: " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the PID; a refused second run then says "unknown".
  }
  return JournalLock(fd);
}

std::optional<long> JournalLock::holder(const std::string& dir) {
  const int fd = ::open(file_in(dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  std::optional<long> pid;
  if (::fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type != F_UNLCK) pid = read_pid(fd);
  ::close(fd);
  return pid;
}

JournalLock::JournalLock(JournalLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

JournalLock::~JournalLock() {
  if (fd_ >= 0) ::close(fd_);
}

Journal::Journal(std::string path, int fd, std::vector<nlohmann::json> records,
                 std::size_t truncated)
    : path_(std::move(path)), fd_(fd), records_(std::move(records)), truncated_(truncated) {}

Journal::Journal(Journal&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      records_(std::move(other.records_)),
      truncated_(other.truncated_) {
  other.fd_ = -1;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
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
  Journal j(path, open_for_append(path, O_CREAT | O_TRUNC), {header}, 0);
  write_line(j.fd_, header, path);
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
  return Journal(path, open_for_append(path, 0), std::move(p.records), p.truncated);
}

void Journal::append(const nlohmann::json& record) {
  write_line(fd_, record, path_);
  records_.push_back(record);
}

}  // namespace torchperf
