#include "torchperf/process/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "torchperf/error.h"
#include "torchperf/process/scratch_dir.h"

namespace torchperf {
namespace {

std::string failure(const std::string& what, const std::string& path) {
  return "shared memory file '" + path + "': " + what + " failed: " + std::strerror(errno);
}

}  // namespace

std::string shared_region_dir() {
  struct stat s {};
  if (::stat("/dev/shm", &s) == 0 && S_ISDIR(s.st_mode) && ::access("/dev/shm", W_OK | X_OK) == 0)
    return "/dev/shm";
  return scratch_dir().string();
}

SharedRegion::SharedRegion(const std::string& tag) {
  path_ = shared_region_dir() + "/torchperf-" + std::to_string(::getuid()) + "-" +
          std::to_string(::getpid()) + "-" + tag;
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) throw RuntimeFailure(failure("creating it", path_));
}

SharedRegion::~SharedRegion() {
  if (data_) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());
}

void SharedRegion::map(std::size_t bytes) {
  if (data_) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
  if (bytes == 0) return;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) throw RuntimeFailure(failure("mapping " + std::to_string(bytes) + " bytes", path_));
  data_ = static_cast<std::uint8_t*>(p);
  size_ = bytes;
}

std::uint8_t* SharedRegion::reserve(std::size_t bytes) {
  if (bytes <= size_ && data_) return data_;
  // Grown by half again, so that calls growing a little at a time do not remap each time.
  const std::size_t want = std::max(bytes, size_ + size_ / 2);
  if (::ftruncate(fd_, static_cast<off_t>(want)) != 0)
    throw RuntimeFailure(failure("growing it to " + std::to_string(want) + " bytes", path_));
  map(want);
  return data_;
}

const std::uint8_t* SharedRegion::view(std::size_t bytes) {
  if (bytes != size_ || !data_) {
    struct stat s {};
    if (::fstat(fd_, &s) != 0) throw RuntimeFailure(failure("reading its size", path_));
    if (static_cast<std::size_t>(s.st_size) < bytes)
      throw RuntimeFailure("shared memory file '" + path_ + "' holds " +
                           std::to_string(s.st_size) + " bytes, where its writer said " +
                           std::to_string(bytes));
    map(bytes);
  }
  return data_;
}

}  // namespace torchperf
