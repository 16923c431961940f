// `torchperf tune hf:PATH`: a real small decoder saved by save_pretrained, tuned across the
// generation knobs in processes of their own, the journal resumed, and each bad input refused in
// one line with its exit code.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "test_paths.h"

namespace torchperf {
namespace {

using testing::CliRun;
using testing::run_cli;
using testing::run_shell;

// A folder written by save_pretrained (tests/python/decoder_models.py's Llama-style decoder).
std::string saved_decoder(const std::filesystem::path& dir) {
  const auto folder = dir / "decoder";
  if (std::filesystem::exists(folder / "config.json")) return folder.string();
  const auto run = run_shell(std::string("cd '") + TORCHPERF_TEST_SOURCE_DIR +
                             "/tests/python' && '" + TORCHPERF_TEST_PYTHON +
                             "' -c 'import sys, decoder_models; "
                             "decoder_models.tiny_llama().save_pretrained(sys.argv[1])' '" +
                             folder.string() + "' 2>&1");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  return folder.string();
}

std::size_t lines_in(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-generate-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(GenerateCommandTest, ASavedDecoderIsTunedPointByPointAndItsJournalResumes) {
  const auto dir = scratch("tune");
  const auto model = "hf:" + saved_decoder(dir);
  const auto out = dir / "run";
  const std::vector<std::string> args = {
      "tune", model, "--prompt", "16", "--new-tokens", "8", "--batch", "1,2", "--calls", "3",
      "--space",
      "engine=pytorch;precision=fp32;weights=none;cache=dynamic;compile=off;threads=1", "--budget", "3m", "--quiet",
      "--out", out.string()};
  const CliRun run = run_cli(args);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("winner (*): batch "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("HF generate, eager fp32 (1 threads)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("In your program (transformers):"), std::string::npos) << run.out;
  // A header and the two points (one at each batch).
  EXPECT_EQ(lines_in(out / "generation.jsonl"), 3u);
  const auto result = nlohmann::json::parse(std::ifstream(out / "result.json"));
  ASSERT_EQ(result.at("points").size(), 2u);
  for (const auto& p : result.at("points")) {
    EXPECT_TRUE(p.at("measured").get<bool>()) << p.dump();
    EXPECT_GT(p.at("decode_tokens_per_s").at("median").get<double>(), 0);
    EXPECT_EQ(p.at("guard").at("token_agreement"), 1.0) << p.dump();
  }
  // The same tune again: every point is in the journal, none is measured again.
  const CliRun again = run_cli(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(lines_in(out / "generation.jsonl"), 3u);
  EXPECT_TRUE(std::filesystem::exists(out / "report.html"));
  std::filesystem::remove_all(dir);
}

TEST(GenerateCommandTest, EachBadInputGetsOneLineAndItsExitCode) {
  const auto dir = scratch("bad");
  const auto model = "hf:" + saved_decoder(dir);
  const auto empty = dir / "empty";
  std::filesystem::create_directories(empty);
  struct Bad {
    std::vector<std::string> args;
    int exit_code;
    std::string piece;
  };
  const std::vector<Bad> table = {
      {{"tune", "hf:" + empty.string()}, 4, "no config.json there"},
      {{"tune", model, "--new-tokens", "0"}, 2, "--new-tokens 0: expected at least 1"},
      {{"tune", model, "--prompt", "lots"}, 2, "--prompt 'lots'"},
      {{"tune", model, "--space", "graph=eager"}, 2, "'graph' is not a generation knob"},
      {{"tune", model, "--precision", "bf16"}, 2, "--precision is not a generation knob"},
      {{"tune", model, "--slo", "ttft=soon"}, 2, "--slo ttft"},
      {{"tune", model, "--prompt", "200", "--new-tokens", "8"}, 5,
       "need 208 positions; the model has 128"},
      {{"tune", "--generate", "--from-python", "decoder_models:not_an_lm"}, 4,
       "has no generate: expected a transformers causal LM"},
  };
  for (const auto& bad : table) {
    auto args = bad.args;
    for (const auto& extra : {"--quiet", "--out"}) args.push_back(extra);
    args.push_back((dir / ("out-" + std::to_string(&bad - table.data()))).string());
    const auto run = run_shell("cd '" + std::string(TORCHPERF_TEST_SOURCE_DIR) +
                               "/tests/python' && \"$TORCHPERF\" " + [&] {
                                 std::string joined;
                                 for (const auto& a : args) joined += " '" + a + "'";
                                 return joined;
                               }());
    EXPECT_EQ(run.exit_code, bad.exit_code) << bad.args[1] << ": " << run.err;
    EXPECT_NE(run.err.find(bad.piece), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace torchperf
