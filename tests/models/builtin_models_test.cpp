#include "torchperf/models/builtin_models.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"
#include "torchperf/models/accuracy.h"
#include "torchperf/feed/inputs.h"

namespace torchperf {
namespace {

std::vector<at::Tensor> run_builtin(const std::string& name, std::int64_t batch,
                                    std::uint64_t seed = 0) {
  torch::NoGradGuard no_grad;
  auto module = build_builtin(name, seed);
  return flatten_output(module.forward(make_inputs(find_builtin(name).default_inputs, batch, 0)));
}

}  // namespace

TEST(BuiltinModelsTest, ResNet18ProducesOneThousandLogitsPerImage) {
  const auto out = run_builtin("resnet18", 2);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sizes(), (std::vector<std::int64_t>{2, 1000}));
  EXPECT_TRUE(at::isfinite(out[0]).all().item<bool>());
}

TEST(BuiltinModelsTest, ResNet18HasTorchvisionsParameterCount) {
  std::int64_t count = 0;
  for (const auto& p : build_builtin("resnet18").parameters()) count += p.numel();
  EXPECT_EQ(count, 11689512);  // torchvision.models.resnet18()
}

TEST(BuiltinModelsTest, MlpMapsFlatImagesToTenClasses) {
  EXPECT_EQ(run_builtin("mlp", 3)[0].sizes(), (std::vector<std::int64_t>{3, 10}));
}

TEST(BuiltinModelsTest, EncoderReturnsSequenceAndPooledOutputs) {
  const auto out = run_builtin("encoder", 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].sizes(), (std::vector<std::int64_t>{2, 32, 64}));
  EXPECT_EQ(out[1].sizes(), (std::vector<std::int64_t>{2, 64}));
}

TEST(BuiltinModelsTest, ConvBnKeepsConvBiasBeforeBatchNorm) {
  auto module = build_builtin("convbn");
  bool conv_bias = false;
  for (const auto& p : module.named_parameters())
    if (p.name == "conv1.bias") conv_bias = true;
  EXPECT_TRUE(conv_bias);
  EXPECT_EQ(run_builtin("convbn", 2)[0].sizes(), (std::vector<std::int64_t>{2, 10}));
}

TEST(BuiltinModelsTest, WeightsAreDeterministicPerSeed) {
  EXPECT_TRUE(at::equal(run_builtin("mlp", 2, 7)[0], run_builtin("mlp", 2, 7)[0]));
  EXPECT_FALSE(at::equal(run_builtin("mlp", 2, 7)[0], run_builtin("mlp", 2, 8)[0]));
}

TEST(BuiltinModelsTest, BuiltinsLoadInEvalModeLikeAnExportedModel) {
  EXPECT_FALSE(build_builtin("resnet18").is_training());
}

TEST(BuiltinModelsTest, ParametersRequireGradSoAutogradRecordsByDefault) {
  auto m = build_builtin("mlp");
  for (const auto& p : m.parameters()) EXPECT_TRUE(p.requires_grad());
  const auto out = m.forward(make_inputs(find_builtin("mlp").default_inputs, 1, 0)).toTensor();
  EXPECT_TRUE(out.requires_grad());
}

TEST(BuiltinModelsTest, EveryListedBuiltinCarriesItsInputs) {
  for (const auto& info : builtin_models()) {
    EXPECT_FALSE(info.default_inputs.tensors.empty()) << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
  }
}

TEST(BuiltinModelsTest, UnknownNamesListTheKnownOnes) {
  try {
    find_builtin("resnet50");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("builtin:resnet18"), std::string::npos);
  }
}

}  // namespace torchperf
