#include "torchperf/config/configuration_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "torchperf/error.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

class ConfigurationFileTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const std::string path = (fs::temp_directory_path() /
                              ("torchperf-config-" + std::to_string(::getpid()) + ".json")).string();
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) fs::remove(p);
  }
  void expect_refused(const std::string& text, const std::string& piece) {
    try {
      read_configuration_file(write(text));
      ADD_FAILURE() << "accepted " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
    }
  }
  std::vector<std::string> paths_;
};

TEST_F(ConfigurationFileTest, AWrittenFileReadsBackTheSame) {
  ConfigurationFile f;
  f.configuration = Configuration::parse("threads=2,graph=frozen-opt");
  f.model = "builtin:resnet18";
  f.input_spec = "3x224x224";
  f.evidence = "2.3x over the baseline";
  const ConfigurationFile back = read_configuration_file(write(to_json(f).dump(2)));
  EXPECT_EQ(back.configuration.to_string(), "threads=2,graph=frozen-opt");
  EXPECT_EQ(back.model, "builtin:resnet18");
  EXPECT_EQ(back.input_spec, "3x224x224");
  EXPECT_EQ(back.evidence, "2.3x over the baseline");
}

// Issue 84: what serve needs to host a tune's winner as it was tuned travels in the file (its
// --dims, the Python API's module, the calibration, the tuned figures), and a saved folder's
// files named relative to it are read beside it wherever the folder went.
TEST_F(ConfigurationFileTest, WhatTheTuneMeasuredTravelsAndFilesBesideItAreFoundThere) {
  const fs::path dir = fs::temp_directory_path() / ("torchperf-saved-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "model.pt2") << "x";
  std::ofstream(dir / "module.pt") << "x";
  ConfigurationFile f;
  f.configuration = Configuration::parse("runtime=python,graph=compile");
  f.model = "model.pt2";
  f.dims = {"S=lognormal:40:0.9:4..512"};
  f.python_module = "module.pt";
  f.calibration_file = "/elsewhere/calibration.pt";
  f.tuned.samples_per_s = 812.5;
  f.tuned.low = 800;
  f.tuned.high = 825;
  f.tuned.tokens_per_s = 31000;
  f.tuned.latency_p50_ms = 9.75;
  f.tuned.batch = 8;
  std::ofstream(dir / "winner.json") << to_json(f).dump(2);
  const ConfigurationFile back = read_configuration_file((dir / "winner.json").string());
  EXPECT_EQ(back.model, (dir / "model.pt2").string());
  EXPECT_EQ(back.python_module, (dir / "module.pt").string());
  EXPECT_EQ(back.calibration_file, "/elsewhere/calibration.pt");
  EXPECT_EQ(back.dims, f.dims);
  EXPECT_DOUBLE_EQ(back.tuned.samples_per_s, 812.5);
  EXPECT_DOUBLE_EQ(back.tuned.low, 800);
  EXPECT_DOUBLE_EQ(back.tuned.high, 825);
  EXPECT_DOUBLE_EQ(back.tuned.tokens_per_s, 31000);
  EXPECT_DOUBLE_EQ(back.tuned.latency_p50_ms, 9.75);
  EXPECT_EQ(back.tuned.batch, 8);
  // A file of a plain tune says none of it, and reads as before.
  const nlohmann::json plain = to_json(ConfigurationFile{});
  EXPECT_FALSE(plain.contains("dims") || plain.contains("tuned") || plain.contains("python_module"));
  fs::remove_all(dir);
  expect_refused(R"({"kind":"configuration","schema_version":1,"configuration":"","dims":"S=4..8"})",
                 "'dims' must be a list of strings");
}

TEST_F(ConfigurationFileTest, BadFilesAreRefusedWithTheReason) {
  EXPECT_THROW(read_configuration_file("/nonexistent/winner.json"), ConfigError);
  expect_refused("{oops", "not a JSON object");
  expect_refused(R"({"kind":"bench"})", "not a torchperf configuration file");
  expect_refused(R"({"kind":"configuration","schema_version":9,"configuration":""})",
                 "schema version 9");
  expect_refused(R"({"kind":"configuration","schema_version":1,"configuration":"turbo=on"})",
                 "unknown knob 'turbo'");
  expect_refused(R"({"kind":"configuration","schema_version":1,"configuration":"","model":3})",
                 "'model' must be a string");
}

TEST_F(ConfigurationFileTest, OnlyJsonNamesAreTakenForFiles) {
  EXPECT_TRUE(names_configuration_file("runs/r18/winner.json"));
  EXPECT_FALSE(names_configuration_file("threads=2"));
  EXPECT_FALSE(names_configuration_file(".json"));
}

}  // namespace
}  // namespace torchperf
