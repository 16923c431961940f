#include "torchperf/train/batch_loader.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/error.h"
#include "torchperf/train/image_codec.h"
#include "torchperf/train/training_data.h"

namespace torchperf {
namespace {

using testing::fixture;

std::shared_ptr<const TrainingData> images(const std::string& folder) {
  DataSpec s = DataSpec::parse("images:" + fixture(folder));
  s.image_size = 8;
  return open_training_data(s);
}

LoaderOptions options(int workers, long long batch = 4) {
  LoaderOptions o;
  o.batch = batch;
  o.workers = workers;
  return o;
}

TEST(BatchLoaderTest, MakesFullBatchesEpochAfterEpochWithAndWithoutWorkers) {
  for (const int workers : {0, 2}) {
    BatchLoader loader(images("images"), options(workers));
    for (int i = 0; i < 10; ++i) {  // 18 images: 4 batches an epoch, so 3 epochs
      const Batch b = loader.next();
      EXPECT_EQ(b.inputs.sizes(), (std::vector<std::int64_t>{4, 3, 8, 8}));
      EXPECT_EQ(b.targets.sizes(), (std::vector<std::int64_t>{4}));
    }
    EXPECT_EQ(loader.epochs(), 3u) << workers << " workers";
  }
}

TEST(BatchLoaderTest, Uint8TransferHandsOverBytes) {
  LoaderOptions o = options(1);
  o.transfer = Transfer::kUint8;
  BatchLoader loader(images("images"), o);
  EXPECT_EQ(loader.next().inputs.scalar_type(), at::kByte);
}

TEST(BatchLoaderTest, SkipsAndCountsACorruptImage) {
  LoaderOptions o = options(0, 19);  // the whole folder in one batch
  o.shuffle = false;
  BatchLoader loader(images("images_corrupt"), o);
  const Batch b = loader.next();
  EXPECT_EQ(b.inputs.size(0), 18);
  EXPECT_EQ(loader.skipped(), 1u);
}

TEST(BatchLoaderTest, WithStrictACorruptImageIsAnErrorFromAnyThread) {
  for (const int workers : {0, 2}) {
    LoaderOptions o = options(workers, 19);
    o.strict = true;
    BatchLoader loader(images("images_corrupt"), o);
    EXPECT_THROW(loader.next(), ImageDecodeError) << workers << " workers";
  }
}

TEST(BatchLoaderTest, DataSmallerThanABatchAreAUsageError) {
  EXPECT_THROW(BatchLoader(images("images"), options(0, 64)), UsageError);
}

}  // namespace
}  // namespace torchperf
