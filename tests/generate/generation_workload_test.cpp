#include "torchperf/generate/generation_workload.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {
namespace {

TEST(GenerationWorkloadTest, AFixedPromptLengthAndADistributionAreBothAccepted) {
  const auto fixed = parse_prompt_lengths("128");
  EXPECT_EQ(fixed.min, 128);
  EXPECT_EQ(fixed.max, 128);
  const auto range = parse_prompt_lengths("32..512");
  EXPECT_EQ(range.min, 32);
  EXPECT_EQ(range.max, 512);
  EXPECT_THROW(parse_prompt_lengths("0"), UsageError);
  EXPECT_THROW(parse_prompt_lengths("lots"), UsageError);
}

TEST(GenerationWorkloadTest, ModelsAreSaveTheirFolderOrAFactoryAndNothingElse) {
  const auto dir = std::filesystem::temp_directory_path() / "tp-gen-source";
  std::filesystem::create_directories(dir);
  EXPECT_THROW(parse_model_source("hf:" + dir.string(), ""), ModelError);  // no config.json
  std::ofstream(dir / "config.json") << "{}";
  const auto source = parse_model_source("hf:" + dir.string(), "");
  EXPECT_EQ(source.kind, LanguageModelSource::Kind::kHfFolder);
  EXPECT_EQ(source.to_json().at("kind"), "hf");
  EXPECT_EQ(parse_model_source("", "lms:make").to_json().at("spec"), "lms:make");
  EXPECT_THROW(parse_model_source("", "lms"), UsageError);
  EXPECT_THROW(parse_model_source("model.pt2", ""), UsageError);
  EXPECT_THROW(parse_model_source("hf:/no/such/folder", ""), ModelError);
  std::filesystem::remove_all(dir);
}

TEST(GenerationWorkloadTest, EveryPointIsFedTheSameCallsAndEachPurposeItsOwn) {
  GenerationWorkload w;
  w.prompt = parse_prompt_lengths("8..64");
  w.new_tokens = 16;
  const auto a = draw_calls(w, 4, 3, "timed");
  const auto b = draw_calls(w, 4, 3, "timed");
  ASSERT_EQ(a.size(), 3u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt_lengths, b[i].prompt_lengths);
    EXPECT_EQ(a[i].seed, b[i].seed);
    EXPECT_EQ(a[i].prompt_lengths.size(), 4u);
    EXPECT_EQ(a[i].new_tokens, 16);
    for (auto n : a[i].prompt_lengths) EXPECT_TRUE(n >= 8 && n <= 64) << n;
  }
  EXPECT_NE(draw_calls(w, 4, 1, "warmup")[0].seed, a[0].seed);
  EXPECT_NE(a[0].seed, a[1].seed);
  // The guard's call is the same whatever the batch, and no longer than the new tokens.
  w.guard_tokens = 32;
  EXPECT_EQ(guard_call(w).new_tokens, 16);
  EXPECT_EQ(guard_call(w).prompt_lengths.size(), w.guard_rows);
}

TEST(GenerationWorkloadTest, NoNewTokensIsRefusedNamingTheFlag) {
  GenerationWorkload w;
  w.prompt = parse_prompt_lengths("16");
  w.new_tokens = 0;
  try {
    check_workload(w);
    FAIL() << "0 new tokens accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--new-tokens 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace torchperf
