#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>

#include "support/test_support.h"
#include "torchperf/compat/torch_compat.h"

namespace torchperf {

TEST(InfoCommandsTest, KnobsListsEveryKnobAndBuiltin) {
  const auto run = testing::run_cli({"knobs"});
  ASSERT_EQ(run.exit_code, 0);
  for (const char* text : {"threads", "precision", "bf16-autocast", "graph", "frozen-opt",
                           "resnet18", "encoder:bert-base"})
    EXPECT_NE(run.out.find(text), std::string::npos) << text;
}

TEST(InfoCommandsTest, KnobsAsJsonListTheRegistry) {
  const auto run = testing::run_cli({"knobs", "--json"});
  ASSERT_EQ(run.exit_code, 0);
  const auto j = nlohmann::json::parse(run.out);
  // 15 for bench and tune (4 of them train's too; cuda_graphs, padding and batching among them),
  // 17 train-only (step, accumulation, DDP's and checkpointing among them), 8 worker knobs of
  // bench and tune (the runtime first: the others are resolved for it)
  EXPECT_EQ(j["knobs"].size(), 40u);
  EXPECT_EQ(j["knobs"][0]["name"], "runtime");
  EXPECT_EQ(j["knobs"][1]["name"], "threads");
  EXPECT_TRUE(j["knobs"][1]["integer_valued"].get<bool>());
  EXPECT_EQ(j["knobs"][1]["commands"], nlohmann::json({"bench", "tune", "train"}));
  std::size_t train_only = 0;
  for (const auto& k : j["knobs"])
    train_only += k["commands"] == nlohmann::json({"train"});
  EXPECT_EQ(train_only, 17u);
  EXPECT_EQ(j["builtin_models"][1]["name"], "resnet18");
  std::size_t worker = 0;
  for (const auto& k : j["knobs"])
    if (k["scope"] == "worker") {
      ++worker;
      EXPECT_FALSE(k["swept_by_default"].get<bool>()) << k["name"];
    }
  // runtime, allocator, omp_wait, omp_bind, aten_isa, onednn_isa, mkl_isa, interop, and train's
  // step
  EXPECT_EQ(worker, 9u);
}

TEST(InfoCommandsTest, EnvNamesTorchAndItsBuildAsJson) {
  const auto run = testing::run_cli({"env", "--json"});
  ASSERT_EQ(run.exit_code, 0);
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["torch_version"].get<std::string>(), compat::torch_version());
  const auto& build = j["torch_build"];
  for (const char* field : {"blas", "onednn_version", "openmp", "cpu_capability", "compiler"})
    EXPECT_FALSE(build[field].get<std::string>().empty()) << field << ": " << build.dump();
  EXPECT_FALSE(j["torch_build_config"].get<std::string>().empty());
}

TEST(InfoCommandsTest, EnvSaysTheLibTorchBuildInItsTable) {
  const auto run = testing::run_cli({"env"});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("LibTorch build"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("oneDNN v"), std::string::npos) << run.out;
}

TEST(InfoCommandsTest, ExportWritesABuiltinAsAProgramOrAsTorchScriptByTheFilesName) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-export-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto program = testing::run_cli({"export", "builtin:mlp", (dir / "mlp.pt2").string()});
  ASSERT_EQ(program.exit_code, 0) << program.err;
  EXPECT_NE(program.out.find("a torch.export program"), std::string::npos) << program.out;
  // The program is a model torchperf reads as one: its signature names a dynamic batch.
  const auto bench = testing::run_cli({"bench", (dir / "mlp.pt2").string(), "--runtime", "python",
                                       "--batch", "3", "--time", "0.2", "--target-ci", "0.5",
                                       "--quiet"});
  EXPECT_TRUE(testing::measured(bench));
  const auto script = testing::run_cli({"export", "builtin:mlp", (dir / "mlp.pt").string()});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  EXPECT_EQ(script.out.find("a torch.export program"), std::string::npos) << script.out;
  std::filesystem::remove_all(dir);
}

TEST(InfoCommandsTest, ExportOntoAFolderOrIntoAMissingOneSaysSoWithoutLibTorchsSourceLine) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-export-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto folder = testing::run_cli({"export", "builtin:mlp", dir.string(), "--force"});
  EXPECT_EQ(folder.exit_code, 2) << folder.err;
  EXPECT_NE(folder.err.find("'" + dir.string() + "' is a folder; expected a file name"),
            std::string::npos)
      << folder.err;
  EXPECT_EQ(folder.err.find("enforce fail"), std::string::npos) << folder.err;
  const auto missing =
      testing::run_cli({"export", "builtin:mlp", (dir / "no" / "m.pt").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
  std::filesystem::remove_all(dir);
}

TEST(InfoCommandsTest, NoSubcommandIsAUsageError) {
  const auto run = testing::run_cli({});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("torchperf: error:"), std::string::npos);
}

}  // namespace torchperf
