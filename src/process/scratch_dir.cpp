#include "torchperf/process/scratch_dir.h"

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "torchperf/error.h"

namespace torchperf {
namespace {

std::string user_name() {
  std::vector<char> buffer(4096);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
      found->pw_name && *found->pw_name)
    return found->pw_name;
  return "uid" + std::to_string(::getuid());
}

// Made once; removed by the process that made it (never by a forked child before its exec).
struct Scratch {
  std::filesystem::path path;
  pid_t owner = 0;
  bool keep = false;
  ~Scratch() {
    if (path.empty() || keep || ::getpid() != owner) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::mutex mutex;

Scratch& scratch() {
  static Scratch s;
  return s;
}

}  // namespace

const std::filesystem::path& scratch_dir() {
  std::lock_guard<std::mutex> lock(mutex);
  Scratch& s = scratch();
  if (s.path.empty()) {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    std::string pattern =
        ((ec ? std::filesystem::path("/tmp") : base) / ("torchperf-" + user_name() + "-XXXXXX"))
            .string();
    if (!::mkdtemp(pattern.data()))
      throw RuntimeFailure("cannot make a temporary folder '" + pattern + "': " +
                           std::strerror(errno) + " (set TMPDIR to a folder you can write)");
    s.path = pattern;
    s.owner = ::getpid();
  }
  return s.path;
}

std::string scratch_path(const std::string& name) { return (scratch_dir() / name).string(); }

void keep_scratch_dir() {
  std::lock_guard<std::mutex> lock(mutex);
  scratch().keep = true;
}

void keep_scratch_dir_if_named(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex);
  Scratch& s = scratch();
  if (!s.path.empty() && message.find(s.path.string()) != std::string::npos) s.keep = true;
}

}  // namespace torchperf
