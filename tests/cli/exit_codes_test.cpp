// The exit-code table of docs/cli.md against the one error table (include/torchperf/error.h):
// each code with the kinds that exit with it, no more and no fewer.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "test_paths.h"
#include "torchperf/error.h"

namespace {

using KindsByCode = std::map<int, std::set<std::string>>;

// The rows of the table under "## Exit codes": "| CODE | `kind`, `kind` | when | example |".
KindsByCode documented_table() {
  std::ifstream in(std::string(TORCHPERF_TEST_SOURCE_DIR) + "/docs/cli.md");
  std::string line;
  bool in_section = false;
  KindsByCode table;
  const std::regex row(R"(^\| (\d+) \| ([^|]*) \|)");
  const std::regex name("`([a-z-]+)`");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Exit codes";
    std::smatch m;
    if (!in_section || !std::regex_search(line, m, row)) continue;
    auto& kinds = table[std::stoi(m[1])];
    const std::string cell = m[2];
    for (std::sregex_iterator it(cell.begin(), cell.end(), name), end; it != end; ++it)
      kinds.insert((*it)[1]);
  }
  return table;
}

TEST(ExitCodesTest, TheDocumentedTableListsEachKindWithItsExitCodeAndNothingElse) {
  KindsByCode expected{{0, {}}};  // success is no error kind
  for (const auto& row : torchperf::kErrorKinds) expected[row.exit_code].insert(std::string(row.name));
  EXPECT_EQ(documented_table(), expected)
      << "docs/cli.md's \"## Exit codes\" table and include/torchperf/error.h's kErrorKinds differ";
}

TEST(ExitCodesTest, EachKindNamedOnceReadsBackAndThrowsItsOwnClass) {
  std::set<std::string> names;
  for (const auto& row : torchperf::kErrorKinds) {
    EXPECT_TRUE(names.insert(std::string(row.name)).second) << row.name;
    EXPECT_EQ(torchperf::error_kind_named(row.name), row.kind);
    try {
      torchperf::throw_error(row.kind, "m");
    } catch (const torchperf::Error& e) {
      const bool as_itself = e.kind() == row.kind;
      // Three kinds have no class of their own: they are failures of the run.
      const bool as_runtime = e.kind() == torchperf::ErrorKind::kRuntime &&
                              (row.kind == torchperf::ErrorKind::kProtocol ||
                               row.kind == torchperf::ErrorKind::kInvalidResult);
      const bool as_interrupted = row.kind == torchperf::ErrorKind::kTerminated &&
                                  e.kind() == torchperf::ErrorKind::kInterrupted;
      EXPECT_TRUE(as_itself || as_runtime || as_interrupted) << row.name;
    }
  }
  EXPECT_FALSE(torchperf::error_kind_named("no-such-kind").has_value());
  EXPECT_EQ(torchperf::error_kind_of_exit_code(2), torchperf::ErrorKind::kUsage);
}

}  // namespace
