// A file mapped by this process and by a child it talks to, for bytes too many to cross a pipe as
// JSON: a served call's tensors (serve hosting a Python winner, issue 84). It lies in /dev/shm
// where that can be written (memory, never a disk), else in the run's scratch folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace torchperf {

class SharedRegion {
 public:
  // An empty file of this process's, named for `tag` (unique within the process); removed when
  // the region is destroyed. RuntimeFailure naming the file and the system's reason.
  explicit SharedRegion(const std::string& tag);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  // This side writes: the file grown to at least `bytes` (never shrunk), mapped.
  std::uint8_t* reserve(std::size_t bytes);
  // The other side wrote: the file mapped at the `bytes` it says it grew it to.
  const std::uint8_t* view(std::size_t bytes);

  // The mapping as it is now (null before the first reserve or view).
  std::uint8_t* data() const { return data_; }
  const std::string& path() const { return path_; }
  std::size_t size() const { return size_; }

 private:
  void map(std::size_t bytes);
  std::string path_;
  int fd_ = -1;
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// Where regions are made: /dev/shm when it is a folder this process can write, else the scratch
// folder.
std::string shared_region_dir();

}  // namespace torchperf
