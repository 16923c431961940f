#include "torchperf/feed/shape_stream.h"
#include "torchperf/feed/padded_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "torchperf/error.h"

namespace torchperf {
namespace {

StreamRecipe encoder_recipe(const std::string& padding, const std::string& batching = "arrival") {
  StreamRecipe r;
  r.spec = parse_input_spec("int64:S@1..1000;int64:S@1..2");
  r.dims = {parse_dim_option("S=lognormal:40:0.9:4..512")};
  r.policy.batch = 8;
  r.batches = 12;
  r.policy.padding = parse_padding(padding);
  r.policy.batching = parse_batching(batching);
  r.seed = 5;
  return r;
}

}  // namespace

TEST(ShapeStreamTest, BatchMaxPadsEachBatchToItsLongestAndTheMaskMarksThePadding) {
  const ShapeStream s = build_stream(encoder_recipe("batch-max"));
  ASSERT_EQ(s.batches.size(), 12u);
  EXPECT_EQ(s.samples, 96);
  for (const auto& b : s.batches) {
    const auto longest = *std::max_element(b.lengths.begin(), b.lengths.end());
    EXPECT_EQ(b.padded_length, longest);
    const at::Tensor ids = b.inputs[0].toTensor();
    const at::Tensor mask = b.inputs[1].toTensor();
    EXPECT_EQ(ids.sizes(), (std::vector<std::int64_t>{8, longest}));
    // The mask is 1 on each sample's own tokens and 0 on its padding; ids are 0 on padding.
    EXPECT_EQ(mask.sum().item<std::int64_t>(), b.useful_elements);
    EXPECT_EQ((ids == 0).logical_and(mask == 1).sum().item<std::int64_t>(), 0);
  }
  EXPECT_GT(s.padding_share(), 0.0);
  EXPECT_LT(s.padding_share(), 1.0);
}

TEST(ShapeStreamTest, RealSamplesFillTheBatchesWithTheirOwnValuesAndTypicalInputsPickOne) {
  StreamRecipe r;
  r.spec = parse_input_spec("int64:S@1..100");
  r.samples = {{at::arange(1, 3)}, {at::arange(1, 6)}, {at::arange(1, 4)}};
  r.dims = {NamedDim{"S", {}}};
  r.dims[0].distribution.kind = LengthDistribution::Kind::kFile;
  r.dims[0].distribution.lengths = {2, 5, 3};
  r.dims[0].distribution.min = 2;
  r.dims[0].distribution.max = 5;
  r.policy.batch = 2;
  r.batches = 3;  // 6 samples: the file's 3, twice, in its order
  const ShapeStream s = build_stream(r);
  ASSERT_EQ(s.batches.size(), 3u);
  // Batch 0: samples 0 and 1, padded to 5 with zeros.
  EXPECT_TRUE(s.batches[0].inputs[0].toTensor().equal(
      at::tensor({1, 2, 0, 0, 0, 1, 2, 3, 4, 5}, at::kLong).view({2, 5})));
  EXPECT_EQ(s.batches[1].lengths, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(s.useful_elements, 2 * (2 + 5 + 3));
  // The typical inputs: the sample nearest the median length (3), repeated to the batch.
  const auto typical = typical_inputs(r, 4);
  EXPECT_TRUE(typical[0].toTensor().equal(at::arange(1, 4).repeat({4, 1})));
}

TEST(ShapeStreamTest, PaddingIsCheckedOnTheShortestMedianAndLongestSamplesCutBackToTheirSizes) {
  StreamRecipe r = encoder_recipe("max");
  const ShapeStream s = build_stream(r);
  const auto slots = padding_check_slots(s);
  ASSERT_EQ(slots.size(), 3u);
  std::vector<std::int64_t> all;
  for (const auto& b : s.batches) all.insert(all.end(), b.lengths.begin(), b.lengths.end());
  EXPECT_EQ(slots.front().length, *std::min_element(all.begin(), all.end()));
  EXPECT_EQ(slots.back().length, *std::max_element(all.begin(), all.end()));
  const StreamSlot& shortest = slots.front();
  const auto alone = unpadded_sample(s, r, shortest);
  // Unpadded, at its batch's size: another batch size would be a recompile under torch.compile.
  const auto rows = static_cast<std::int64_t>(s.batches[shortest.batch].sizes.size());
  ASSERT_GT(rows, 2);
  EXPECT_EQ(alone[0].toTensor().sizes(), (std::vector<std::int64_t>{rows, shortest.length}));
  EXPECT_EQ(alone[1].toTensor().sum().item<std::int64_t>(), rows * shortest.length) << "no padding left";
  EXPECT_TRUE(alone[0].toTensor()[0].equal(alone[0].toTensor()[rows - 1]));
  const auto row = unpadded_row({at::arange(6).view({2, 3}), at::scalar_tensor(1.0)});
  EXPECT_EQ(row[0].sizes(), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(row[1].dim(), 0) << "a scalar output is kept whole";
  // An output [batch, padded length, 3] is cut to the sample's row and its own length; a pooled
  // one [batch, 3] to its row; one shorter than the sample's cannot be cut.
  const std::int64_t padded = s.batches[shortest.batch].padded_length;
  const auto cut = cut_to_sample({at::ones({8, padded, 3}), at::ones({8, 3})}, shortest.row,
                                 {at::ones({1, shortest.length, 3}), at::ones({1, 3})});
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ((*cut)[0].sizes(), (std::vector<std::int64_t>{1, shortest.length, 3}));
  EXPECT_FALSE(cut_to_sample({at::ones({8, 2})}, 0, {at::ones({1, 3})}).has_value());
}

TEST(ShapeStreamTest, SortingAWindowByLengthWastesLessPaddingThanArrivalOrder) {
  const ShapeStream arrival = build_stream(encoder_recipe("batch-max"));
  const ShapeStream sorted = build_stream(encoder_recipe("batch-max", "sorted:96"));
  EXPECT_EQ(arrival.useful_elements, sorted.useful_elements);  // the same samples
  EXPECT_LT(sorted.padding_share(), arrival.padding_share());
  EXPECT_LT(sorted.padding_share(), build_stream(encoder_recipe("max")).padding_share());
}

TEST(ShapeStreamTest, MultiplesAndBucketsRoundUpAndNeverPastTheLongestLength) {
  for (const auto& b : build_stream(encoder_recipe("multiple:64")).batches) {
    EXPECT_TRUE(b.padded_length % 64 == 0 || b.padded_length == 512) << b.padded_length;
    EXPECT_LE(b.padded_length, 512);
  }
  for (const auto& b : build_stream(encoder_recipe("buckets:32/128/512")).batches)
    EXPECT_TRUE(b.padded_length == 32 || b.padded_length == 128 || b.padded_length == 512);
  for (const auto& b : build_stream(encoder_recipe("max")).batches) EXPECT_EQ(b.padded_length, 512);
}

TEST(ShapeStreamTest, ASampleHoldsTheSameValuesWhateverItIsPaddedTo) {
  const ShapeStream a = build_stream(encoder_recipe("batch-max"));
  const ShapeStream b = build_stream(encoder_recipe("max"));
  const auto n = a.batches[0].lengths[0];
  EXPECT_TRUE(a.batches[0].inputs[0].toTensor()[0].narrow(0, 0, n).equal(
      b.batches[0].inputs[0].toTensor()[0].narrow(0, 0, n)));
}

TEST(ShapeStreamTest, BucketEdgesThatDoNotCoverTheLongestLengthAreRefusedByName) {
  try {
    build_stream(encoder_recipe("buckets:32,64,256"));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("do not cover S's longest length 512"), std::string::npos)
        << e.what();
  }
}

TEST(ShapeStreamTest, MalformedPolicyValuesNameTheFormsExpected) {
  const auto message = [](auto parse, const std::string& text) {
    try {
      parse(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(parse_padding, "pow2").find("batch-max, multiple:M, buckets"), std::string::npos);
  EXPECT_NE(message(parse_padding, "multiple:0").find("positive whole number"), std::string::npos);
  EXPECT_NE(message(parse_padding, "buckets:64/32").find("ascending"), std::string::npos);
  EXPECT_NE(message(parse_batching, "sorted:").find("positive whole number"), std::string::npos);
  EXPECT_NE(message(parse_batching, "random").find("arrival or sorted:W"), std::string::npos);
}

TEST(ShapeStreamTest, EachNamedDimensionIsPaddedWithinItsOwnLongestLength) {
  StreamRecipe r = encoder_recipe("buckets:32/128/512");
  r.spec = parse_input_spec("int64:S@1..1000;2xSxT");
  r.dims = {parse_dim_option("S=lognormal:40:0.9:4..512"), parse_dim_option("T=1..5")};
  for (const auto& b : build_stream(r).batches) EXPECT_LE(b.inputs[1].toTensor().size(3), 5);
}

}  // namespace torchperf

namespace torchperf {
namespace {

LengthDistribution file_of(std::vector<std::int64_t> lengths) {
  LengthDistribution d;
  d.kind = LengthDistribution::Kind::kFile;
  d.min = *std::min_element(lengths.begin(), lengths.end());
  d.max = *std::max_element(lengths.begin(), lengths.end());
  d.lengths = std::move(lengths);
  return d;
}

// The padded length of the batches sorted windows of 256 form, each padded to the first edge
// that holds its longest.
std::int64_t padded_in_sorted_windows(std::vector<std::int64_t> lengths, std::int64_t batch,
                                      const std::vector<std::int64_t>& edges) {
  std::int64_t total = 0;
  for (std::size_t w = 0; w < lengths.size(); w += 256) {
    const std::size_t end = std::min(lengths.size(), w + 256);
    std::sort(lengths.begin() + w, lengths.begin() + end);
    for (std::size_t b = w; b < end; b += batch) {
      const std::int64_t longest = lengths[std::min(end, b + batch) - 1];
      total += *std::find_if(edges.begin(), edges.end(), [&](auto e) { return e >= longest; }) *
               static_cast<std::int64_t>(std::min(end, b + batch) - b);
    }
  }
  return total;
}

}  // namespace

TEST(ShapeStreamTest, ATimedPassRunsBatchesDrawnAcrossTheStreamsPaddedSizes) {
  StreamRecipe r = encoder_recipe("batch-max");
  r.batches = 40;
  r.timed_batches = 4;
  const ShapeStream s = build_stream(r);
  ASSERT_EQ(s.timed.size(), 4u);
  EXPECT_TRUE(std::is_sorted(s.timed.begin(), s.timed.end()));
  // One from each quarter of the batches ordered by padded size: the smallest and the largest
  // quarter are both represented.
  std::vector<std::int64_t> sizes;
  for (const auto& b : s.batches) sizes.push_back(b.padded_elements);
  std::sort(sizes.begin(), sizes.end());
  std::vector<std::int64_t> timed;
  std::int64_t timed_padded = 0;
  for (const auto b : s.timed) {
    timed.push_back(s.batches[b].padded_elements);
    timed_padded += s.batches[b].padded_elements;
  }
  std::sort(timed.begin(), timed.end());
  EXPECT_LE(timed.front(), sizes[10]);
  EXPECT_GE(timed.back(), sizes[29]);
  EXPECT_EQ(s.timed_padded_elements, timed_padded);
  EXPECT_DOUBLE_EQ(s.pass_scale(), static_cast<double>(s.padded_elements) / timed_padded);
}

TEST(ShapeStreamTest, ZeroTimedBatchesTimesTheWholeStream) {
  StreamRecipe r = encoder_recipe("batch-max");
  r.timed_batches = 0;
  const ShapeStream s = build_stream(r);
  EXPECT_EQ(s.timed.size(), s.batches.size());
  EXPECT_DOUBLE_EQ(s.pass_scale(), 1.0);
}

TEST(ShapeStreamTest, ALengthsFileIsCoveredWholeAndADrawnDistributionBy64Batches) {
  std::vector<std::int64_t> lengths(2048, 10);
  const std::vector<NamedDim> file = {NamedDim{"S", file_of(lengths)}};
  EXPECT_EQ(stream_batch_count(file, 16), 128u);
  EXPECT_EQ(stream_batch_count(file, 500), 16u) << "never fewer than 16 batches";
  EXPECT_EQ(stream_batch_count({NamedDim{"S", file_of(std::vector<std::int64_t>(100000, 3))}}, 1),
            256u)
      << "never more than 256";
  EXPECT_EQ(stream_batch_count({parse_dim_option("S=4..64")}, 16), 64u);
}

TEST(ShapeStreamTest, TheGuidesBatchesLongestLengthsAreEachSortedWindowsBatchesLast) {
  // Two windows of 256: each sorted, then cut into batches of 128.
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 512; ++i) lengths.push_back(1 + (i * 97) % 512);
  const std::vector<std::int64_t> longest = batch_longest_lengths(file_of(lengths), 128, 0);
  ASSERT_EQ(longest.size(), 4u);
  EXPECT_TRUE(std::is_sorted(longest.begin(), longest.end()));
  EXPECT_EQ(longest.back(), 512);
  std::vector<std::int64_t> first(lengths.begin(), lengths.begin() + 256);
  std::sort(first.begin(), first.end());
  EXPECT_NE(std::find(longest.begin(), longest.end(), first[127]), longest.end());
  EXPECT_NE(std::find(longest.begin(), longest.end(), first[255]), longest.end());
}

TEST(ShapeStreamTest, PaddedWidthsCountTheShapesAPaddingLeaves) {
  const std::vector<std::int64_t> longest = {10, 20, 30, 40, 70, 130};
  EXPECT_EQ(padded_widths(parse_padding("batch-max"), longest, 200), 6u);
  EXPECT_EQ(padded_widths(parse_padding("multiple:64"), longest, 200), 3u) << "64, 128, 192";
  EXPECT_EQ(padded_widths(parse_padding("buckets:32/200"), longest, 200), 2u);
  EXPECT_EQ(padded_widths(parse_padding("max"), longest, 200), 1u);
}

TEST(ShapeStreamTest, BucketEdgesMinimiseThePaddingOfTheGuidesSortedBatchesAndGiveTheTailItsOwn) {
  // Mostly short, a thin tail to 450: quantile edges (median, p75, p90, longest) pad the batches
  // of the tail, sorted together, to 450.
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 2048; ++i) lengths.push_back(20 + (i * 37) % 60);  // 20..79
  for (int i = 0; i < 60; ++i) lengths.push_back(120 + (i * 13) % 200);  // a tail to 319
  lengths.push_back(450);
  const LengthDistribution d = file_of(lengths);
  const std::string text = suggested_buckets(d, 16, 0);
  const PaddingPolicy p = parse_padding(text);
  ASSERT_FALSE(p.edges.empty());
  EXPECT_EQ(p.edges.back(), 450) << text;
  EXPECT_LE(p.edges.size(), 4u);
  EXPECT_GE(p.edges.size(), 3u) << "the tail gets edges of its own: " << text;
  EXPECT_TRUE(std::all_of(p.edges.begin(), p.edges.end() - 1, [](auto e) { return e % 8 == 0; }))
      << text;
  std::vector<std::int64_t> sorted = lengths;
  std::sort(sorted.begin(), sorted.end());
  const auto q = [&](double f) {
    return std::min<std::int64_t>(450, (sorted[static_cast<std::size_t>(f * (sorted.size() - 1))] + 7) / 8 * 8);
  };
  const std::vector<std::int64_t> quantiles = {q(0.5), q(0.75), q(0.9), 450};
  EXPECT_LT(padded_in_sorted_windows(lengths, 16, p.edges),
            padded_in_sorted_windows(lengths, 16, quantiles))
      << text;
}

TEST(ShapeStreamTest, ASampleCopiedPaddedFillsTheStartOfItsRegionAndLeavesTheRestAsItWas) {
  const at::Tensor sample = at::arange(1, 7, at::kLong).reshape({2, 3});
  at::Tensor region = at::zeros({3, 5}, at::kLong);
  copy_padded(region, sample);
  EXPECT_TRUE(region.narrow(0, 0, 2).narrow(1, 0, 3).equal(sample));
  EXPECT_EQ(region.sum().item<std::int64_t>(), sample.sum().item<std::int64_t>());
  EXPECT_EQ(region[2].count_nonzero().item<std::int64_t>(), 0);
  EXPECT_EQ(region.narrow(1, 3, 2).count_nonzero().item<std::int64_t>(), 0);
}

}  // namespace torchperf
