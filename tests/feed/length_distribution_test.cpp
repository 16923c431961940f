#include "torchperf/feed/length_distribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "torchperf/error.h"

namespace torchperf {
namespace {

std::string message_of(const std::string& option) {
  try {
    parse_dim_option(option);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

std::string write_lengths(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST(LengthDistributionTest, AUniformRangeDrawsWithinItAndTheSameSeedGivesTheSameLengths) {
  const NamedDim d = parse_dim_option("S=8..512");
  EXPECT_EQ(d.name, "S");
  EXPECT_EQ(d.distribution.min, 8);
  EXPECT_EQ(d.distribution.max, 512);
  const auto a = d.distribution.draw(1000, 3);
  EXPECT_EQ(a, d.distribution.draw(1000, 3));
  EXPECT_NE(a, d.distribution.draw(1000, 4));
  EXPECT_GE(*std::min_element(a.begin(), a.end()), 8);
  EXPECT_LE(*std::max_element(a.begin(), a.end()), 512);
}

TEST(LengthDistributionTest, ALognormalIsSkewedShortWithItsMedianNearTheOneGiven) {
  const NamedDim d = parse_dim_option("S=lognormal:40:0.9:4..512");
  auto lengths = d.distribution.draw(4001, 1);
  std::sort(lengths.begin(), lengths.end());
  EXPECT_NEAR(static_cast<double>(lengths[2000]), 40.0, 6.0);
  EXPECT_GE(lengths.front(), 4);
  EXPECT_LE(lengths.back(), 512);
  EXPECT_GT(lengths.back(), 200);  // a tail, not a clamp at the median
}

TEST(LengthDistributionTest, ALengthsFileIsReplayedInItsOrderAndItsRangeIsItsOwn) {
  const auto path = write_lengths("torchperf-lengths-ok.txt", "# counted from a corpus\n12\n\n30\r\n7\n");
  const NamedDim d = parse_dim_option("S=file:" + path);
  EXPECT_EQ(d.distribution.min, 7);
  EXPECT_EQ(d.distribution.max, 30);
  EXPECT_EQ(d.distribution.draw(7, 9), (std::vector<std::int64_t>{12, 30, 7, 12, 30, 7, 12}));
}

TEST(LengthDistributionTest, ALengthsFileWithABadLineIsNamedWithTheLine) {
  const auto path = write_lengths("torchperf-lengths-bad.txt", "12\n30\nforty\n");
  EXPECT_NE(message_of("S=file:" + path).find("line 3: expected one positive whole number, got 'forty'"),
            std::string::npos)
      << message_of("S=file:" + path);
  EXPECT_NE(message_of("S=file:/no/such/lengths").find("cannot read the lengths file '/no/such/lengths'"),
            std::string::npos);
  const auto empty = write_lengths("torchperf-lengths-empty.txt", "# none\n");
  EXPECT_NE(message_of("S=file:" + empty).find("no lengths in it"), std::string::npos);
}

TEST(LengthDistributionTest, MalformedOptionsNameTheOptionAndTheFormsExpected) {
  EXPECT_NE(message_of("8..512").find("expected NAME=DISTRIBUTION"), std::string::npos);
  EXPECT_NE(message_of("S=512..8").find("is empty"), std::string::npos);
  EXPECT_NE(message_of("S=0..8").find("positive whole number, got '0'"), std::string::npos);
  EXPECT_NE(message_of("S=lognormal:40:4..512").find("lognormal:MEDIAN:SIGMA:MIN..MAX"), std::string::npos);
  EXPECT_NE(message_of("S=lognormal:40:-1:4..512").find("sigma as a positive number"), std::string::npos);
  EXPECT_NE(message_of("S=normal").find("MIN..MAX, lognormal"), std::string::npos);
}

TEST(LengthDistributionTest, ADimensionGivenTwiceIsRefusedNamingBothNotKeptInSilence) {
  try {
    parse_dim_options({"S=4..64", "S=8..16"});
    ADD_FAILURE() << "a dimension given twice was taken";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--dim S is given twice (S=4..64 and S=8..16): expected one --dim per "
                           "dimension");
  }
  EXPECT_THROW(dims_for({"S"}, {parse_dim_option("S=4..64"), parse_dim_option("S=8..16")}),
               UsageError);
  EXPECT_EQ(parse_dim_options({"S=4..64", "T=1..3"}).size(), 2u);
}

TEST(LengthDistributionTest, EachNamedDimensionNeedsADistributionAndEachDimOptionADimension) {
  const std::vector<NamedDim> given{parse_dim_option("S=1..9")};
  EXPECT_EQ(dims_for({"S"}, given).size(), 1u);
  try {
    dims_for({"S", "T"}, given);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("dimension T is named but has no distribution"), std::string::npos);
  }
  try {
    dims_for({}, given);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the input spec names no dimension S (it names none"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace torchperf
