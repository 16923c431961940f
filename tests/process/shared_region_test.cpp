#include "torchperf/process/shared_region.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "torchperf/error.h"

namespace torchperf {
namespace {

TEST(SharedRegionTest, AChildSeesWhatThisProcessWroteAndThisProcessWhatItGrewTheFileTo) {
  SharedRegion in("test-in"), out("test-out");
  EXPECT_EQ(in.path().rfind(shared_region_dir(), 0), 0u) << in.path();
  struct stat s {};
  ASSERT_EQ(::stat(in.path().c_str(), &s), 0);
  EXPECT_EQ(s.st_mode & 0777, 0600u) << "another user must not read a call's tensors";
  std::uint8_t* bytes = in.reserve(100);
  ASSERT_GE(in.size(), 100u);
  std::memcpy(bytes, "request", 8);
  // The child (as the Python worker does) reads the input file and writes a larger output file.
  const pid_t child = ::fork();
  if (child == 0) {
    std::ifstream request(in.path(), std::ios::binary);
    char word[8] = {};
    request.read(word, 8);
    std::ofstream answer(out.path(), std::ios::binary | std::ios::trunc);
    std::string big(5000, 'a');
    big.replace(0, 8, std::string(word, 7) + '!');
    answer << big;
    ::_exit(std::strcmp(word, "request") == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child read another request";
  const std::uint8_t* answer = out.view(5000);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(answer), 8), "request!");
  EXPECT_EQ(answer[4999], 'a');
  EXPECT_THROW(out.view(6000), RuntimeFailure) << "past what the file holds";
  // Growing keeps what was written; a smaller size keeps the mapping.
  const std::size_t before = in.size();
  EXPECT_EQ(in.reserve(10), bytes);
  bytes = in.reserve(before * 3);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes), 7), "request");
}

TEST(SharedRegionTest, TheFileIsRemovedWithTheRegion) {
  std::string path;
  {
    SharedRegion r("test-gone");
    path = r.path();
    r.reserve(64);
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace torchperf
