#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"

namespace torchperf {
namespace {

using testing::fixture;
using testing::run_cli;

std::vector<std::string> tiny(std::vector<std::string> more, const std::string& steps = "3",
                              const std::string& batch = "4") {
  // On the CPU even where LibTorch has CUDA, so that CUDA-only knobs are refused everywhere.
  std::vector<std::string> args = {"train", fixture("tiny_cnn.pt"), "--image-size", "16",
                                   "--batch", batch, "--steps", steps, "--warmup", "1",
                                   "--device", "cpu", "--quiet"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(TrainCommandTest, PrintsTheBreakdownAndAdvice) {
  const auto r = run_cli(tiny({}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step-time breakdown"), std::string::npos);
  EXPECT_NE(r.out.find("data wait"), std::string::npos);
  EXPECT_NE(r.out.find("samples/s"), std::string::npos);
}

TEST(TrainCommandTest, JsonHtmlAndTraceAreWritten) {
  // Per process and emptied first, so that files from an earlier run cannot pass for this one's.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf_train_cli_test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto r = run_cli(tiny({"--workers", "1", "--json", "--html", (dir / "r.html").string(),
                               "--trace", (dir / "t.json").string(), "--trace-schedule", "0,1,1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "torchperf.train/1");
  EXPECT_EQ(j["breakdown"]["steps"], 3);
  EXPECT_TRUE(std::filesystem::exists(dir / "r.html"));
  std::ifstream trace(dir / "t.json");
  ASSERT_TRUE(trace.good()) << "no trace written";
  EXPECT_FALSE(nlohmann::json::parse(trace).at("traceEvents").empty());
  std::filesystem::remove_all(dir);
}

TEST(TrainCommandTest, ABuiltInTrainsInPythonWithItsStepsBrokenDownAsInCpp) {
  const auto r = run_cli({"train", "builtin:convbn", "--image-size", "16", "--batch", "4",
                          "--steps", "3", "--warmup", "1", "--device", "cpu", "--step", "eager",
                          "--workers", "1", "--json", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["configuration"], "batch=4,workers=1,step=eager");
  EXPECT_EQ(j["breakdown"]["steps"], 3);
  EXPECT_GT(j["breakdown"]["samples_per_second"].get<double>(), 0);
  double shares = 0;
  for (const auto& [phase, entry] : j["breakdown"]["phases"].items())
    shares += entry["share"].get<double>();
  EXPECT_NEAR(shares, 1.0, 1e-6);
}

TEST(TrainCommandTest, TheMlpTrainsWithItsDefaultsOnVectorsOfItsWidthNotOnImages) {
  // Issue 63: builtin:mlp was fed 3x224x224 images and failed on the shape.
  const auto r = run_cli({"train", "builtin:mlp", "--steps", "3", "--warmup", "1", "--json",
                          "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["data"].get<std::string>().rfind("synthetic-features:784: 50000 random vectors", 0),
            0u)
      << j["data"];
  EXPECT_EQ(j["breakdown"]["steps"], 3);
}

TEST(TrainCommandTest, AModuleFromPythonTrainsInPython) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf_train_from_python-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tinynet.py") << "import torch\n"
                                       "class Net(torch.nn.Module):\n"
                                       "    def __init__(self):\n"
                                       "        super().__init__()\n"
                                       "        self.conv = torch.nn.Conv2d(3, 8, 3)\n"
                                       "        self.fc = torch.nn.Linear(8, 10)\n"
                                       "    def forward(self, x):\n"
                                       "        return self.fc(self.conv(x).mean((2, 3)))\n";
  const auto r = testing::run_shell("cd " + dir.string() +
                                    " && \"$TORCHPERF\" train --from-python tinynet:Net "
                                    "--image-size 16 --batch 4 --steps 2 --warmup 1 --device cpu "
                                    "--json --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "python:tinynet:Net");
  EXPECT_EQ(j["breakdown"]["steps"], 2);
  bool channels_last_advised = false;  // it has a convolution: the format knob applies
  for (const auto& a : j["advice"]) channels_last_advised |= a["knob"] == "format";
  EXPECT_TRUE(channels_last_advised || j["breakdown"]["utilisation"].get<double>() <= 0.5);
  std::filesystem::remove_all(dir);
}

TEST(TrainCommandTest, ATorchScriptFileCannotTrainInPython) {
  const auto r = run_cli(tiny({"--step", "compile"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("step=compile does not apply"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Python definition"), std::string::npos) << r.err;
}

TEST(TrainCommandTest, ACorruptJpegIsSkippedAndCountedOrAnErrorWithStrict) {
  const std::string data = "images:" + fixture("images_corrupt");
  const auto skipped = run_cli(tiny({"--data", data}, "2", "19"));  // every epoch reads every file
  ASSERT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_NE(skipped.out.find("corrupt example(s) skipped"), std::string::npos);
  const auto strict = run_cli(tiny({"--data", data, "--strict"}, "2", "19"));
  EXPECT_EQ(strict.exit_code, 5);
  EXPECT_NE(strict.err.find("broken.jpg"), std::string::npos);
}

TEST(TrainCommandTest, AMissingOrEmptyImageFolderIsAUsageError) {
  EXPECT_EQ(run_cli(tiny({"--data", "images:/no/such/folder"})).exit_code, 2);
  const auto empty = run_cli(tiny({"--data", "images:" + fixture("images_empty")}));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("no .jpg"), std::string::npos);
}

TEST(TrainCommandTest, AnOutputThatDoesNotFitTheLossExitsFiveNamingShapes) {
  const auto r = run_cli({"train", fixture("regressor.pt"), "--data",
                          "tensors:" + fixture("regression_3.pt"), "--batch", "8", "--quiet"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("[8, 4]"), std::string::npos);
  EXPECT_NE(r.err.find("[8, 3]"), std::string::npos);
}

TEST(TrainCommandTest, ANanLossExitsSevenNamingTheStepUnlessTheScalerSkipsIt) {
  std::vector<std::string> args = {"train", fixture("diverges.pt"), "--image-size", "8", "--batch",
                                   "4", "--steps", "4", "--warmup", "1", "--quiet"};
  const auto diverged = run_cli(args);
  EXPECT_EQ(diverged.exit_code, 7);
  EXPECT_NE(diverged.err.find("NaN at step 3"), std::string::npos) << diverged.err;
  args.insert(args.end(), {"--grad-scaler", "on"});
  const auto scaled = run_cli(args);
  ASSERT_EQ(scaled.exit_code, 0) << scaled.err;
  EXPECT_NE(scaled.out.find("skipped by the gradient scaler"), std::string::npos);
}

TEST(TrainCommandTest, KnobsThatDoNotApplyAndBadFlagsAreUsageErrors) {
  EXPECT_EQ(run_cli(tiny({"--amp", "fp16"})).exit_code, 2);
  const auto negative = run_cli(tiny({"--workers=-1"}));
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.err.find("expects an integer >= 0, got '-1'"), std::string::npos)
      << negative.err;
  EXPECT_EQ(run_cli(tiny({"--config", "grad=no_grad"})).exit_code, 2);
  EXPECT_EQ(run_cli(tiny({"--data", "cifar"})).exit_code, 2);
  EXPECT_EQ(run_cli(tiny({"--ladder", "--rounds", "3"})).exit_code, 2);
}

TEST(TrainCommandTest, TheLadderPrintsItsTable) {
  const auto r =
      run_cli(tiny({"--ladder", "--rounds", "4", "--max-rounds", "6", "--block-steps", "1",
                    "--max-rungs", "1"},
                   "2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("naive loop"), std::string::npos);
  EXPECT_NE(r.out.find("cumulative"), std::string::npos);
  EXPECT_NE(r.out.find("stopped:"), std::string::npos);
}

TEST(TrainCommandTest, SigtermStopsTheLadderAndSaysWhereToContinueFrom) {
  // Stopped once its first attempt is printed, while the next one is being compared.
  const auto r = testing::run_shell(
      "d=$(mktemp -d); \"$TORCHPERF\" train '" + fixture("tiny_cnn.pt") +
      "' --image-size 16 --batch 4 --steps 3 --warmup 1 --device cpu --ladder --rounds 4 "
      "--max-rounds 40 --block-steps 4 > /dev/null 2> \"$d/err\" & pid=$!; i=0; "
      "while ! grep -q tried \"$d/err\" && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; "
      "kill -TERM $pid; wait $pid; code=$?; cat \"$d/err\" >&2; rm -rf \"$d\"; exit $code");
  if (r.exit_code == 0) GTEST_SKIP() << "the ladder ended before SIGTERM: " << r.err;
  EXPECT_EQ(r.exit_code, 143) << r.err;
  EXPECT_NE(r.err.find("torchperf: error: train --ladder stopped after "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("continue from the last rung with --ladder --config"), std::string::npos)
      << r.err;
}

TEST(TrainCommandTest, AThreadsChangeOnTheLadderIsComparedInTwoWorkerProcesses) {
  if (::sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one core: threads=2 is never advised";
  // At 64x64 the tiny CNN is compute-bound, so threads=1 draws the threads advice.
  auto args = tiny({"--threads", "1", "--ladder", "--rounds", "4", "--max-rounds", "6", "--block-steps", "1",
                    "--max-rungs", "1", "--json"},
                   "2", "16");
  args[3] = "64";  // --image-size
  const auto r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto ladder = nlohmann::json::parse(r.out)["ladder"];
  bool advised = false;
  for (const auto& a : ladder["rungs"][0]["advice"]) advised |= a.value("knob", "") == "threads";
  // Under a sanitizer or on a slow machine the breakdown may not call for threads at all.
  if (!advised) GTEST_SKIP() << "no threads advice here: " << ladder["rungs"][0]["advice"].dump();
  bool tried = false;
  for (const auto& a : ladder["attempts"]) {
    const std::string change = a["change"];
    if (change.rfind("threads=", 0) != 0) continue;
    tried = true;
    EXPECT_TRUE(a["separate_processes"].get<bool>()) << a.dump();
    EXPECT_GE(a["speedup"]["rounds"].size(), 4u);  // more while undecided, two at a time
    EXPECT_EQ(a["speedup"]["rounds"].size() % 2, 0u);
  }
  EXPECT_TRUE(tried) << ladder["attempts"].dump();
  // The other process knob train has on the CPU (executor) is compared the same way, and so is
  // any compound change ("together") holding one of them; the rest within one process.
  for (const auto& a : ladder["attempts"]) {
    const std::string change = "," + a["change"].get<std::string>();
    const bool process = change.find(",threads=") != std::string::npos ||
                         change.find(",executor=") != std::string::npos;
    EXPECT_EQ(a["separate_processes"].get<bool>(), process) << a.dump();
  }
}

TEST(TrainCommandTest, AProcessKnobTrainCannotApplyIsRefused) {
  const auto r = run_cli(tiny({"--config", "allocator=jemalloc"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("allocator=jemalloc is not a knob of train (it belongs to bench and tune)"),
            std::string::npos)
      << r.err;
}

TEST(TrainCommandTest, BenchRefusesATrainingKnob) {
  const auto r = run_cli({"bench", "builtin:mlp", "--config", "workers=2", "--time", "0.1", "--target-ci", "0.5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("belongs to train"), std::string::npos) << r.err;
}

TEST(TrainCommandTest, AModelRejectingTheDataExitsFive) {
  const auto r = run_cli({"train", fixture("tiny_cnn.pt"), "--data",
                          "tensors:" + fixture("regression.pt"), "--batch", "8", "--quiet"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("the model rejected a batch of shape"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace torchperf
