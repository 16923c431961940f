#include "torchperf/models/flop_counter.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "torchperf/models/builtin_models.h"
#include "torchperf/feed/inputs.h"

namespace torchperf {

TEST(FlopCounterTest, CountsTwoFlopsPerMultiplyAddOfAMatmul) {
  const auto a = torch::randn({8, 32}), b = torch::randn({32, 16});
  const FlopCount count = count_flops([&] { torch::mm(a, b); });
  EXPECT_EQ(count.flops, 2u * 8 * 32 * 16);
  EXPECT_EQ(count.counted_ops, 1u);
}

TEST(FlopCounterTest, CountsConvolutionsGivenWithSingleElementLists) {
  const auto x = torch::randn({1, 3, 16, 16}), w = torch::randn({4, 3, 3, 3});
  // stride 1, padding 1: output 16x16, each output value 3*3*3 multiply-adds.
  const FlopCount count = count_flops([&] { torch::conv2d(x, w, {}, 1, 1); });
  EXPECT_EQ(count.flops, 2u * 4 * 16 * 16 * 3 * 3 * 3);
}

TEST(FlopCounterTest, ResNet18MatchesItsPublishedCost) {
  auto model = build_builtin("resnet18");
  const auto inputs = make_inputs(find_builtin("resnet18").default_inputs, 1, 0);
  torch::NoGradGuard no_grad;
  const FlopCount count = count_flops([&] { model.forward(inputs); });
  // torchvision lists 1.814 GMAC (3.63 GFLOP) for resnet18 at 224x224: convolutions and fc.
  EXPECT_NEAR(static_cast<double>(count.flops) / 1e9, 3.63, 0.04);
}

TEST(FlopCounterTest, LeavesNoObserverBehind) {
  ASSERT_FALSE(at::hasThreadLocalCallbacks());
  const auto a = torch::randn({8, 8});
  EXPECT_EQ(count_flops([&] { torch::mm(a, a); }).flops, 2u * 8 * 8 * 8);
  EXPECT_FALSE(at::hasThreadLocalCallbacks());
  EXPECT_EQ(count_flops([] {}).flops, 0u);
}

TEST(FlopCounterTest, StopsObservingWhenTheWorkThrows) {
  EXPECT_THROW(count_flops([] { throw std::runtime_error("boom"); }), std::runtime_error);
  const auto a = torch::randn({4, 4});
  EXPECT_EQ(count_flops([&] { torch::mm(a, a); }).flops, 2u * 4 * 4 * 4);
}

}  // namespace torchperf
