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
