// `torchperf report` run as a user would: the terminal report, each output file, the winner's
// configuration file measured again by bench, and one clear line with its own exit code for each
// bad results file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "support/known_runs.h"
#include "support/test_support.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;

class ReportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("torchperf-reportcli-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    testing::write_synthetic_run(run_dir("r18"), testing::known_run());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string run_dir(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories(dir_);
    std::ofstream((dir_ / name).string()) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

void expect_one_line_error(const CliRun& run, int code, const std::string& piece) {
  EXPECT_EQ(run.exit_code, code) << run.err;
  EXPECT_EQ(run.err.rfind("torchperf: error: ", 0), 0u) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find(piece), std::string::npos) << piece << " in " << run.err;
}

TEST_F(ReportCommandTest, TheTerminalReportExplainsTheRun) {
  const CliRun run = run_cli({"report", run_dir("r18")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* piece : {"Recommendations", "avoid threads=1", "Main effects", "Interactions",
                            "Pareto fronts", "Apply the winner"})
    EXPECT_NE(run.out.find(piece), std::string::npos) << piece << "\n" << run.out;
  EXPECT_TRUE(run.err.empty()) << run.err;
}

TEST_F(ReportCommandTest, EachOutputGoesToItsFileOrNextToTheResults) {
  const std::string page = run_dir("page.html");
  const CliRun run = run_cli({"report", run_dir("r18"), "--html", page, "--md", "--csv"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::file_size(page) > 500'000);
  EXPECT_TRUE(fs::exists(run_dir("r18") + "/report.md"));
  EXPECT_TRUE(fs::exists(run_dir("r18") + "/points.csv"));
  EXPECT_NE(run.err.find("written to " + page), std::string::npos) << run.err;
  const CliRun md = run_cli({"report", run_dir("r18"), "--md", "-"});
  EXPECT_EQ(md.out.rfind("# torchperf report", 0), 0u) << md.out;
  const CliRun json = run_cli({"report", run_dir("r18"), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out).at("kind"), "report");
}

TEST_F(ReportCommandTest, TwoRunsSideBySide) {
  testing::write_synthetic_run(run_dir("server"), testing::known_run());
  const CliRun run = run_cli({"report", run_dir("r18"), run_dir("server")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("Side by side"), std::string::npos) << run.out;
}

TEST_F(ReportCommandTest, TheWinnersConfigurationFileIsMeasuredAgainByBench) {
  testing::SyntheticRun mlp;
  mlp.axes = {{"threads", {"1"}}, {"batch", {"4", "8"}}, {"grad", {"on", "no_grad"}}};
  mlp.points = testing::full_factorial(mlp.axes, [](const auto&) { return 1000.0; });
  mlp.winner = "threads=1,batch=4,grad=no_grad";
  testing::write_synthetic_run(run_dir("mlp"), mlp);
  const std::string config = run_dir("winner.json");
  ASSERT_EQ(run_cli({"report", run_dir("mlp"), "--config", config}).exit_code, 0);
  // No model on the command line: the file names it (builtin:mlp) and its inputs.
  const CliRun bench = run_cli({"bench", "--config", config, "--time", "0.2", "--target-ci", "0.5", "--json", "--quiet"});
  ASSERT_TRUE(testing::measured(bench));
  const auto j = nlohmann::json::parse(bench.out);
  const std::string resolved = j.at("measurement").at("configuration").at("string").get<std::string>();
  EXPECT_NE(resolved.find("threads=1,batch=4"), std::string::npos) << resolved;
  EXPECT_NE(resolved.find("grad=no_grad"), std::string::npos) << resolved;
}

TEST_F(ReportCommandTest, BadResultsFilesGetOneLineAndExitCodeSix) {
  expect_one_line_error(run_cli({"report", run_dir("missing")}), 6, "no results at");
  expect_one_line_error(run_cli({"report", write("empty.jsonl", "")}), 6, "is empty");
  const std::string journal = run_dir("r18") + "/results.jsonl";
  std::ifstream in(journal);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Truncated inside its header line: nothing usable.
  expect_one_line_error(run_cli({"report", write("truncated.jsonl", text.substr(0, 40))}), 6,
                        "holds only a cut-short line");
  expect_one_line_error(run_cli({"report", write("foreign.csv", "a,b\n1,2\n")}), 6,
                        "not a tune journal");
  expect_one_line_error(run_cli({"report", write("one-line.txt", "hello\n")}), 6,
                        "not a tune journal");
  std::string v2 = text;
  v2.replace(v2.find("\"schema_version\":1"), 18, "\"schema_version\":2");
  fs::create_directories(run_dir("v2"));
  write("v2/results.jsonl", v2);
  // Two runs of two schemas: the one this torchperf cannot read is named.
  expect_one_line_error(run_cli({"report", run_dir("r18"), run_dir("v2")}), 6, "schema version 2");
  expect_one_line_error(run_cli({"report", run_dir("r18"), "--md", "-", "--csv", "-"}), 2,
                        "only one output");
  // --html's FILE is optional: a run after it is not taken for the file to write.
  expect_one_line_error(run_cli({"report", run_dir("r18"), "--html", run_dir("r18")}), 2,
                        "--html takes a FILE to write");
  expect_one_line_error(run_cli({"bench", "--config", write("bad.json", "{\"kind\":\"x\"}")}), 2,
                        "not a torchperf configuration file");
}

}  // namespace
}  // namespace torchperf
