#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support/test_support.h"

namespace torchperf {
namespace {

using testing::fixture;
using testing::run_cli;

}  // namespace

TEST(LintCommandTest, ConvBnFindingsPrintWithWhereTheyAreAndExitThree) {
  const auto r = run_cli({"lint", "builtin:convbn"});
  EXPECT_EQ(r.exit_code, 3) << r.err;  // warnings, and --fail-on warning by default
  EXPECT_NE(r.out.find("conv-bias-before-bn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("conv1"), std::string::npos) << r.out;
}

TEST(LintCommandTest, FailingOnlyOnErrorsLetsWarningsPass) {
  const auto r = run_cli({"lint", "builtin:convbn", "--fail-on", "error"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(LintCommandTest, ACleanModelExitsZero) {
  const auto r = run_cli({"lint", fixture("resnet18_scripted.pt"), "--fail-on", "warning"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(LintCommandTest, JsonListsEachFindingWithItsModulePath) {
  const auto r = run_cli({"lint", fixture("resnet18_train_scripted.pt"), "--json", "--fail-on", "error"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("schema"), "torchperf.lint/1");
  bool training = false;
  for (const auto& f : j.at("findings")) training |= f.at("rule") == "saved-in-training-mode";
  EXPECT_TRUE(training) << r.out;
}

TEST(LintCommandTest, TheHtmlPageIsWritten) {
  const std::string path = ::testing::TempDir() + "/lint.html";
  std::filesystem::remove(path);
  const auto r = run_cli({"lint", "builtin:convbn", "--html", path, "--fail-on", "error"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(path);
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("conv-bias-before-bn"), std::string::npos);
}

TEST(LintCommandTest, BadInputsGetTheirOwnExitCodes) {
  EXPECT_EQ(run_cli({"lint", fixture("not_a_model.txt")}).exit_code, 4);
  EXPECT_EQ(run_cli({"lint", fixture("truncated.pt")}).exit_code, 4);
  const auto severity = run_cli({"lint", "builtin:convbn", "--fail-on", "fatal"});
  EXPECT_EQ(severity.exit_code, 2);
  EXPECT_NE(severity.err.find("info, warning or error"), std::string::npos) << severity.err;
  EXPECT_EQ(run_cli({"lint", "builtin:convbn", "--device", "tpu"}).exit_code, 2);
}

TEST(LintCommandTest, FixMeasuresEachRewriteAndWritesAModelOnlyWhenOneIsKept) {
  const std::string out = ::testing::TempDir() + "/convbn_fix.pt";
  std::filesystem::remove(out);
  const auto r = run_cli({"lint", "builtin:convbn", "--fix", "--out", out, "--time", "0.3",
                          "--json", "--fail-on", "error"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("rewrites"));
  bool kept = false, fold = false;
  for (const auto& w : j.at("rewrites")) {
    kept |= w.at("kept").get<bool>();
    if (w.at("change") == "conv_bias=fold") {
      fold = true;
      EXPECT_TRUE(w.at("passes_guard").get<bool>()) << w.dump();
    }
  }
  EXPECT_TRUE(fold) << r.out;
  EXPECT_EQ(std::filesystem::exists(out), kept);
}

TEST(LintCommandTest, FixTriesEachPaddingMultipleAndKeepsAtMostOne) {
  const std::string out = ::testing::TempDir() + "/odd_mlp_fix.pt";
  std::filesystem::remove(out);
  const auto r = run_cli({"lint", fixture("odd_mlp.pt"), "--input", "784", "--fix", "--out", out,
                          "--time", "0.3", "--json", "--fail-on", "error"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> pads;
  int kept_pads = 0;
  for (const auto& w : j.at("rewrites")) {
    const std::string change = w.at("change");
    if (change.rfind("pad=", 0) != 0) continue;
    pads.insert(change);
    EXPECT_TRUE(w.at("passes_guard").get<bool>()) << w.dump();  // zeros change nothing
    kept_pads += w.at("kept").get<bool>();
  }
  EXPECT_EQ(pads, (std::set<std::string>{"pad=8", "pad=16", "pad=64"})) << r.out;
  EXPECT_LE(kept_pads, 1);
  bool size_fixable = false;
  for (const auto& f : j.at("findings"))
    if (f.at("rule") == "size-multiple") size_fixable |= f.at("fixable").get<bool>();
  EXPECT_TRUE(size_fixable) << r.out;
}

TEST(LintCommandTest, FixRefusesAMissingOrExistingOutputUnlessForced) {
  EXPECT_EQ(run_cli({"lint", "builtin:convbn", "--fix"}).exit_code, 2);
  const std::string out = ::testing::TempDir() + "/exists.pt";
  std::ofstream(out) << "keep me";
  const auto r = run_cli({"lint", "builtin:convbn", "--fix", "--out", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  std::ifstream in(out);
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "keep me");  // untouched
  EXPECT_EQ(run_cli({"lint", "builtin:convbn", "--out", out}).exit_code, 2);  // --out without --fix
}

}  // namespace torchperf

namespace torchperf {

TEST(LintCommandTest, AModelFromPythonSourceHasItsGraphBreaksFoundAtTheUsersLine) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("torchperf-lint-src-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "breaky.py") << "import torch\n"
                                      "class Net(torch.nn.Module):\n"
                                      "    def __init__(self):\n"
                                      "        super().__init__()\n"
                                      "        self.a = torch.nn.Linear(16, 16)\n"
                                      "        self.b = torch.nn.Linear(16, 4)\n"
                                      "    def forward(self, x):\n"
                                      "        y = self.a(x)\n"
                                      "        if y.sum().item() > 1e9:\n"
                                      "            y = y * 2\n"
                                      "        return self.b(torch.relu(y))\n"
                                      "class Whole(torch.nn.Module):\n"
                                      "    def __init__(self):\n"
                                      "        super().__init__()\n"
                                      "        self.a = torch.nn.Linear(16, 4)\n"
                                      "    def forward(self, x):\n"
                                      "        return torch.tanh(self.a(x))\n";
  const auto broken = testing::run_shell("cd " + dir.string() +
                                         " && \"$TORCHPERF\" lint --from-python breaky:Net "
                                         "--input 16 --json");
  EXPECT_EQ(broken.exit_code, 3) << broken.err;  // a warning, and --fail-on warning
  const auto j = nlohmann::json::parse(broken.out);
  bool found = false;
  for (const auto& f : j.at("findings"))
    if (f.at("rule") == "graph-break") {
      found = true;
      EXPECT_EQ(f.at("source"), "breaky.py:9") << f.dump();
      EXPECT_NE(f.at("evidence").get<std::string>().find("item()"), std::string::npos) << f.dump();
    }
  EXPECT_TRUE(found) << broken.out;
  const auto whole = testing::run_shell("cd " + dir.string() +
                                        " && \"$TORCHPERF\" lint --from-python breaky:Whole "
                                        "--input 16 --fail-on warning");
  EXPECT_NE(whole.out.find("single-graph"), std::string::npos) << whole.out << whole.err;
  EXPECT_EQ(whole.out.find("graph-break"), std::string::npos) << whole.out;
  const auto no_input = testing::run_shell("cd " + dir.string() +
                                           " && \"$TORCHPERF\" lint --from-python breaky:Net");
  EXPECT_EQ(no_input.exit_code, 2) << no_input.err;
  EXPECT_NE(no_input.err.find("expected --input SPEC"), std::string::npos) << no_input.err;
  fs::remove_all(dir);
}

}  // namespace torchperf
