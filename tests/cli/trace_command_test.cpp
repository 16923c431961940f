#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/test_support.h"
#include "test_paths.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;
using testing::fixture;
using testing::run_cli;

std::string real(const std::string& name) {
  return std::string(TORCHPERF_TEST_SOURCE_DIR) + "/tests/data/traces/" + name;
}

class TraceCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("torchperf_trace_cli_test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  // One line on stderr, naming the file, and exit code 8.
  void expect_trace_error(const std::vector<std::string>& args, const std::string& what) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 8) << r.err;
    EXPECT_NE(r.err.find("torchperf: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  fs::path dir_;
};

TEST_F(TraceCommandTest, PrintsTheOverviewOfAKinetoTraceAndWritesItsPage) {
  const auto r =
      run_cli({"trace", real("diff-control-a100.json.gz"), "--html", (dir_ / "t.html").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step time breakdown"), std::string::npos);
  EXPECT_NE(r.out.find("advice"), std::string::npos);
  EXPECT_TRUE(fs::file_size(dir_ / "t.html") > 100'000);  // the plotting libraries are inline
}

TEST_F(TraceCommandTest, JsonOfEveryViewAndOfAFolderOfRanks) {
  const auto one = run_cli({"trace", real("mi250-rocm-train.json.gz"), "--all", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto j = nlohmann::json::parse(one.out);
  EXPECT_EQ(j.at("schema"), "torchperf.trace/2");
  EXPECT_FALSE(j.at("traces").at(0).at("kernels").empty());
  fs::create_directories(dir_ / "ranks");
  fs::copy_file(real("diff-control-a100.json.gz"), dir_ / "ranks" / "rank3.json.gz");
  fs::copy_file(real("diff-test-v100.json.gz"), dir_ / "ranks" / "rank1.json.gz");
  const auto ranks = run_cli({"trace", (dir_ / "ranks").string(), "--json"});
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  EXPECT_EQ(nlohmann::json::parse(ranks.out).at("ranks").at("slowest_rank"), 1);
}

TEST_F(TraceCommandTest, TheV100TracesStepsCountEachKernelOnceAndShowTheDevicesLag) {
  const auto r = run_cli({"trace", real("v100-ns-resolution-rank0.json.gz"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = nlohmann::json::parse(r.out).at("traces").at(0);
  std::uint64_t events = 0;
  for (const auto& step : t.at("steps")) {
    events += step.at("device").at("events").get<std::uint64_t>();
    // The host spans are 35-96 ms; a step's device work spans at most its host span plus the
    // device's lag (how far behind the host it runs), which is reported.
    const double host = step.at("ms").get<double>();
    EXPECT_LT(host, 100);
    EXPECT_LE(step.at("device").at("span_ms").get<double>(),
              host + step.at("lag_ms").get<double>() + 1e-6);
  }
  EXPECT_EQ(events + t.at("outside_steps").at("events").get<std::uint64_t>(), 6095u);
  const auto text = run_cli({"trace", real("v100-ns-resolution-rank0.json.gz"), "--sequences",
                             "--sequence-length", "4"});
  EXPECT_NE(text.out.find("6095 device events: 6095 launched in steps, 0 outside steps"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("runs of 4 computation kernels"), std::string::npos);
  EXPECT_EQ(run_cli({"trace", real("v100-ns-resolution-rank0.json.gz"), "--sequence-length", "1"})
                .exit_code,
            2);
}

TEST_F(TraceCommandTest, ReadsATraceFromStandardInputOrAPipe) {
  const std::string gz = real("cpu-only-rank34.json.gz");
  const testing::CliRun piped = testing::run_shell("zcat '" + gz + "' | \"$TORCHPERF\" trace -");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out.rfind("trace -: Kineto form", 0), 0u) << piped.out;
  EXPECT_NE(piped.out.find("steps: 1"), std::string::npos) << piped.out;
  const testing::CliRun fifo = testing::run_shell(
      "d=$(mktemp -d); mkfifo \"$d/p\"; zcat '" + gz + "' > \"$d/p\" & "
      "\"$TORCHPERF\" trace \"$d/p\"; code=$?; rm -rf \"$d\"; exit $code");
  ASSERT_EQ(fifo.exit_code, 0) << fifo.err;
  EXPECT_NE(fifo.out.find("steps: 1"), std::string::npos) << fifo.out;
}

TEST_F(TraceCommandTest, DiffComparesTwoTraces) {
  const auto r = run_cli({"trace", real("diff-control-a100.json.gz"),
                          real("diff-test-v100.json.gz"), "--diff", "--top", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("operators (host self time):"), std::string::npos);
  EXPECT_NE(r.out.find("Memcpy DtoD (Device -> Device)"), std::string::npos) << r.out;
  const auto one = run_cli({"trace", real("diff-control-a100.json.gz"), "--diff"});
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("--diff compares two traces; got 1 path(s)"), std::string::npos);
}

TEST_F(TraceCommandTest, ReadsTheTraceThatTorchperfTrainWrites) {
  const std::string trace = (dir_ / "train.json").string();
  const auto train = run_cli({"train", fixture("tiny_cnn.pt"), "--image-size", "16", "--batch", "4",
                              "--steps", "3", "--warmup", "1", "--device", "cpu", "--quiet",
                              "--trace", trace, "--trace-schedule", "0,1,2"});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  const auto r = run_cli({"trace", trace, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out).at("traces").at(0);
  EXPECT_TRUE(j.at("annotated_steps").get<bool>());
  EXPECT_EQ(j.at("steps").size(), 2u);
  EXPECT_GT(j.at("average").at("categories_ms").at("cpu_exec").get<double>(), 0);
}

TEST_F(TraceCommandTest, EveryBadInputIsOneLineWithExitCodeEight) {
  expect_trace_error({"trace", write("notjson.json", "hello")}, "not JSON: expected '{'");
  expect_trace_error({"trace", write("cut.json", R"({"traceEvents": [{"ph": "X", "name": "a", )")},
                     "truncated JSON: the text ends at byte ");
  expect_trace_error({"trace", write("none.json", R"({"schemaVersion": 1})")}, "no trace events");
  expect_trace_error(
      {"trace", write("corrupt.json.gz", std::string("\x1f\x8b\x08\x00garbage", 11))}, "gzip");
  expect_trace_error({"trace", (dir_ / "missing.json").string()}, "no such file or folder");
  fs::create_directories(dir_ / "empty");
  expect_trace_error({"trace", (dir_ / "empty").string()}, "has no trace files");
  const std::string bad = write(
      "bad.json",
      R"([{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "name": "b", "ts": "x", "dur": 1}])");
  const auto lenient = run_cli({"trace", bad});
  ASSERT_EQ(lenient.exit_code, 0) << lenient.err;
  EXPECT_NE(lenient.out.find("skipped: 1 events"), std::string::npos) << lenient.out;
  expect_trace_error({"trace", bad, "--strict"}, "event 2 at byte ");
}

}  // namespace
}  // namespace torchperf
