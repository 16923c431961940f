#include "torchperf/feed/feed_json.h"

#include <gtest/gtest.h>

namespace torchperf {
namespace {

TEST(FeedJsonTest, ASpecReachesThePythonSideTypedWithItsNamedDimensionsRanges) {
  const InputSpec spec =
      parse_input_spec("attention_mask=int64:S@1..2;input_ids=int64:S@0..1000;float16:3x4");
  const std::vector<NamedDim> dims = {parse_dim_option("S=lognormal:40:0.9:4..512")};
  const nlohmann::json feed = feed_json(spec, dims);
  ASSERT_EQ(feed["inputs"].size(), 3u);
  EXPECT_EQ(feed["inputs"][0]["argument"], "attention_mask");
  EXPECT_EQ(feed["inputs"][0]["dtype"], "int64");
  EXPECT_EQ(feed["inputs"][0]["shape"], nlohmann::json::array({"S"}));
  EXPECT_EQ(feed["inputs"][0]["range"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(feed["inputs"][2]["argument"], nullptr);
  EXPECT_EQ(feed["inputs"][2]["dtype"], "float16");
  EXPECT_EQ(feed["inputs"][2]["shape"], nlohmann::json::array({3, 4}));
  EXPECT_EQ(feed["inputs"][2]["range"], nullptr);
  EXPECT_EQ(feed["dims"]["S"], nlohmann::json::array({4, 512}));
}

TEST(FeedJsonTest, TheSchemaNamesEveryFieldAnEntryHas) {
  const nlohmann::json feed = feed_json(parse_input_spec("int64:8@0..10"), {});
  for (const auto& [field, value] : feed["inputs"][0].items())
    EXPECT_TRUE(feed_schema()["inputs"].contains(field)) << field;
  for (const auto& [field, value] : feed.items()) EXPECT_TRUE(feed_schema().contains(field)) << field;
}

}  // namespace
}  // namespace torchperf
