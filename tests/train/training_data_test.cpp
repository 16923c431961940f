#include "torchperf/train/training_data.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

using testing::fixture;

DataSpec spec(const std::string& source, int size = 16) {
  DataSpec s = DataSpec::parse(source);
  s.image_size = size;
  return s;
}

TEST(TrainingDataTest, SyntheticCifarIsDeterministicAndResizedAndNormalised) {
  const auto data = open_training_data(spec("synthetic-cifar", 24));
  EXPECT_EQ(data->classes(), 10);
  const Example a = data->get(7, Transfer::kFloat32);
  const Example b = data->get(7, Transfer::kFloat32);
  EXPECT_EQ(a.input.sizes(), (std::vector<std::int64_t>{3, 24, 24}));
  EXPECT_TRUE(at::equal(a.input, b.input));
  EXPECT_GE(a.input.min().item<float>(), -1.0f);
  EXPECT_LE(a.input.max().item<float>(), 1.0f);
  EXPECT_FALSE(at::equal(a.input, data->get(8, Transfer::kFloat32).input));
}

TEST(TrainingDataTest, Uint8TransferNormalisedAfterTheCopyMatchesTheHostPipeline) {
  const auto data = open_training_data(spec("synthetic-cifar", 24));
  const at::Tensor host = data->get(3, Transfer::kFloat32).input;
  const at::Tensor bytes = data->get(3, Transfer::kUint8).input;
  EXPECT_EQ(bytes.scalar_type(), at::kByte);
  // Rounding to bytes costs at most half a level: 0.5/255 before normalising, 1/255 after.
  EXPECT_LE((normalize_after_copy(bytes) - host).abs().max().item<float>(), 1.0f / 255 + 1e-5f);
}

TEST(TrainingDataTest, AnImageFolderHasOneClassPerSubFolder) {
  const auto data = open_training_data(spec("images:" + fixture("images")));
  EXPECT_EQ(data->classes(), 3);
  EXPECT_EQ(data->size(), 18u);
  const Example e = data->get(17, Transfer::kFloat32);
  EXPECT_EQ(e.target.item<std::int64_t>(), 2);
  EXPECT_EQ(e.input.sizes(), (std::vector<std::int64_t>{3, 16, 16}));
}

TEST(TrainingDataTest, AMissingOrEmptyFolderIsAUsageError) {
  EXPECT_THROW(open_training_data(spec("images:/no/such/folder")), UsageError);
  EXPECT_THROW(open_training_data(spec("images:" + fixture("images_empty"))), UsageError);
}

TEST(TrainingDataTest, SavedTensorsGiveRegressionOrClassTargets) {
  const auto data = open_training_data(spec("tensors:" + fixture("regression.pt")));
  EXPECT_EQ(data->classes(), 0);
  EXPECT_EQ(data->size(), 64u);
  EXPECT_FALSE(data->uint8_images());
  EXPECT_THROW(open_training_data(spec("tensors:" + fixture("inputs_image.pt"))), UsageError);
}

TEST(TrainingDataTest, NegativeClassTargetsAreRefusedNamingTheValue) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("torchperf-negative-targets-" + std::to_string(::getpid()) + ".pt");
  const auto bytes = torch::pickle_save(c10::ivalue::Tuple::create(
      {at::zeros({4, 3}), at::tensor({-1, 0, 1, 2}, at::kLong)}));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  try {
    open_training_data(spec("tensors:" + path.string()));
    ADD_FAILURE() << "a class target of -1 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("class targets must be >= 0, got -1"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TEST(TrainingDataTest, UnknownSourcesAndSizesAreRefused) {
  EXPECT_THROW(DataSpec::parse("cifar"), UsageError);
  EXPECT_THROW(DataSpec::parse("images:"), UsageError);
  EXPECT_THROW(open_training_data(spec("synthetic-cifar", 0)), UsageError);
}

}  // namespace
}  // namespace torchperf
