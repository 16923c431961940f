#include "torchperf/analysis/run_results.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/known_runs.h"
#include "support/synthetic_run.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

class RunResultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("torchperf-run-results-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  testing::SyntheticRun small_run() {
    testing::SyntheticRun run;
    run.axes = {{"threads", {"2", "1"}}, {"grad", {"on", "inference"}}};
    run.points = testing::full_factorial(run.axes, [](const auto& k) {
      return 100.0 * (k.at("threads") == "1" ? 0.7 : 1.0) * (k.at("grad") == "inference" ? 1.1 : 1.0);
    });
    run.winner = "threads=2,grad=inference";
    return run;
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  void expect_refused(const std::string& path, const std::string& piece) {
    try {
      load_run(path);
      ADD_FAILURE() << "accepted " << path;
    } catch (const ResultsError& e) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  fs::path dir_;
};

TEST_F(RunResultsTest, ADirectoryOrItsJournalIsReadBackWithEveryPoint) {
  const std::string file = testing::write_synthetic_run((dir_ / "r1").string(), small_run());
  for (const std::string& path : {(dir_ / "r1").string(), file}) {
    const RunResults run = load_run(path);
    EXPECT_EQ(run.label, "r1");
    EXPECT_EQ(run.model, "builtin:mlp");
    ASSERT_EQ(run.axes.size(), 2u);
    EXPECT_EQ(run.axes[0].first, "threads");
    EXPECT_EQ(run.points.size(), 4u);
    EXPECT_EQ(run.origin, "threads=2,grad=on");
    ASSERT_TRUE(run.summary.has_value());
    EXPECT_TRUE(run.warnings.empty());
  }
}

TEST_F(RunResultsTest, KeyKnobsSplitAResolvedKey) {
  const auto knobs = key_knobs("threads=2,batch=8,graph=frozen-opt");
  ASSERT_EQ(knobs.size(), 3u);
  EXPECT_EQ(knobs[2], (std::pair<std::string, std::string>{"graph", "frozen-opt"}));
}

TEST_F(RunResultsTest, AnInterruptedSweepIsReadWithAWarningAndNoWinner) {
  auto r = small_run();
  r.winner = "";
  const std::string file = testing::write_synthetic_run((dir_ / "cut").string(), r);
  // A write cut short by a kill: the last line has no end.
  std::ofstream(file, std::ios::app) << R"({"record":"point","key":"thr)";
  const RunResults run = load_run(file);
  EXPECT_EQ(run.points.size(), 4u);
  EXPECT_FALSE(run.summary.has_value());
  ASSERT_EQ(run.warnings.size(), 2u);
  EXPECT_NE(run.warnings[0].find("cut short"), std::string::npos);
  EXPECT_NE(run.warnings[1].find("did not complete"), std::string::npos);
  EXPECT_EQ(run.origin, "threads=2,grad=on");  // from the point with no change
}

TEST_F(RunResultsTest, ABusyMachineNoteIsAWarningWhereTheRunIsRead) {
  testing::SyntheticRun run = testing::known_run();
  run.notes = {"left out of the space: mode=train",
               "a busy machine: other work kept 1.0 of 2 core(s) busy before the sweep"};
  testing::write_synthetic_run(dir_.string(), run);
  const RunResults read = load_run(dir_.string());
  ASSERT_EQ(read.warnings.size(), 1u);
  EXPECT_EQ(read.warnings[0], run.notes[1]);
}

TEST_F(RunResultsTest, AFinalistsFullMeasurementReplacesItsBriefOne) {
  const std::string file = testing::write_synthetic_run((dir_ / "smart").string(), small_run());
  // As a smart search writes it: the point measured briefly, later again in full.
  std::vector<nlohmann::json> records;
  {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  }
  nlohmann::json full;
  for (auto& r : records)
    if (r.value("record", "") == "point" && full.is_null()) {
      r["brief"] = true;
      full = r;
      full["brief"] = false;
      full["score"] = 12345.0;
    }
  records.insert(records.end() - 1, full);  // before the summary
  {
    std::ofstream out(file, std::ios::trunc);
    for (const auto& r : records) out << r.dump() << "\n";
  }
  const RunResults run = load_run(file);
  ASSERT_EQ(run.points.size(), 4u);
  EXPECT_EQ(run.points[0].key, full.at("key").get<std::string>());
  EXPECT_FALSE(run.points[0].brief);
  EXPECT_DOUBLE_EQ(run.points[0].score, 12345.0);
}

TEST_F(RunResultsTest, MissingEmptyDamagedAndForeignFilesAreRefusedByName) {
  expect_refused((dir_ / "nothing").string(), "no results at");
  fs::create_directories(dir_ / "emptydir");
  expect_refused((dir_ / "emptydir").string(), "holds no results.jsonl");
  expect_refused(write("empty.jsonl", ""), "is empty");
  expect_refused(write("text.jsonl", "hello\nworld\n"), "first line is not JSON");
  expect_refused(write("other.jsonl", "{\"record\":\"row\",\"x\":1}\n"), "not a header");
  expect_refused(write("bench.json", "{\n  \"kind\": \"bench\",\n  \"x\": 1\n}\n"),
                 "output of torchperf bench --json");
  expect_refused(write("doc.json", "{\n  \"a\": 1\n}\n"), "JSON document");
  // A header alone: a tune that stopped before its first session.
  const std::string file = testing::write_synthetic_run((dir_ / "h").string(), small_run());
  std::string header;
  std::getline(std::ifstream(file) >> std::ws, header);
  expect_refused(write("header-only.jsonl", header + "\n"), "no session");
  // Damage in the middle (not a cut-short last line) names the line.
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto third = text.find('\n', text.find('\n') + 1) + 1;
  expect_refused(write("damaged.jsonl", text.substr(0, third) + "{oops\n" + text.substr(third)),
                 "line 3");
}

TEST_F(RunResultsTest, AnotherSchemaIsRefusedWholeOrRecordByRecord) {
  const std::string file = testing::write_synthetic_run((dir_ / "s").string(), small_run());
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string v2 = text;
  v2.replace(v2.find("\"schema_version\":1"), 18, "\"schema_version\":2");
  expect_refused(write("v2.jsonl", v2), "schema version 2");
  // Version 1 in the header, but a point of another shape (metrics renamed): named by line.
  std::string odd = text;
  const auto at = odd.find("\"metrics\"");
  odd.replace(at, 9, "\"numbers\"");
  odd.replace(odd.find("\"numbers\""), 9, "\"metrics\":7,\"numbers\"");
  expect_refused(write("odd.jsonl", odd), "line 3: a point record not of schema version 1");
}

}  // namespace
}  // namespace torchperf
