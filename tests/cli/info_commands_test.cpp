#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace torchperf {

TEST(InfoCommandsTest, KnobsListsEveryKnobAndBuiltin) {
  const auto run = testing::run_cli({"knobs"});
  ASSERT_EQ(run.exit_code, 0);
  for (const char* text : {"threads", "precision", "bf16-autocast", "graph", "frozen-opt", "resnet18", "encoder:bert-base"})
    EXPECT_NE(run.out.find(text), std::string::npos) << text;
}

TEST(InfoCommandsTest, EnvNamesTheLoadedBlasAsJson) {
  const auto run = testing::run_cli({"env", "--json"});
  ASSERT_EQ(run.exit_code, 0);
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_FALSE(j["blas"]["path"].get<std::string>().empty());
  EXPECT_FALSE(j["torch_version"].get<std::string>().empty());
}

TEST(InfoCommandsTest, NoSubcommandIsAUsageError) {
  const auto run = testing::run_cli({});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("torchperf: error:"), std::string::npos);
}

}  // namespace torchperf
