#include "torchperf/train/grad_scaler.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/optim/sgd.h>

namespace torchperf {
namespace {

TEST(GradScalerTest, AFiniteStepUnscalesGradientsAndSteps) {
  at::Tensor w = at::ones({2}).set_requires_grad(true);
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.5));
  GradScaler scaler(GradScalerOptions{8.0, 2.0, 0.5, 2000});
  scaler.scale((w * 3).sum()).backward();
  EXPECT_FLOAT_EQ(w.grad()[0].item<float>(), 24.0f);  // scaled by 8
  EXPECT_TRUE(scaler.step(sgd, {w}));
  EXPECT_FLOAT_EQ(w[0].item<float>(), 1.0f - 0.5f * 3.0f);  // the unscaled gradient was used
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(GradScalerTest, AnInfiniteGradientSkipsTheStepAndBacksOffTheScale) {
  at::Tensor w = at::ones({2}).set_requires_grad(true);
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.5));
  GradScaler scaler(GradScalerOptions{8.0, 2.0, 0.5, 2000});
  scaler.scale((w * std::numeric_limits<float>::infinity()).sum()).backward();
  EXPECT_FALSE(scaler.step(sgd, {w}));
  EXPECT_FLOAT_EQ(w[0].item<float>(), 1.0f);  // unchanged
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 4.0);
}

TEST(GradScalerTest, TheScaleGrowsAfterTheIntervalOfCleanSteps) {
  at::Tensor w = at::ones({1}).set_requires_grad(true);
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.0));
  GradScaler scaler(GradScalerOptions{8.0, 2.0, 0.5, 3});
  for (int i = 0; i < 3; ++i) {
    scaler.scale(w.sum()).backward();
    scaler.step(sgd, {w});
    w.mutable_grad().reset();
  }
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 16.0);
}

}  // namespace
}  // namespace torchperf
