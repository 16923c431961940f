#include "torchperf/models/graph_rewrites.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/passes/inliner.h>

#include "torchperf/models/builtin_models.h"
#include "torchperf/feed/inputs.h"
#include "support/test_support.h"

namespace torchperf {
namespace {

at::Tensor run(torch::jit::Module& m, const std::vector<c10::IValue>& inputs) {
  c10::InferenceMode inference;
  return m.forward(inputs).toTensor();
}

// Batch-norm statistics that are not the identity, so that folding has something to get wrong.
torch::jit::Module convbn_with_statistics() {
  auto m = build_builtin("convbn", 3);
  for (const auto& b : m.named_buffers())
    if (b.name.find("running_mean") != std::string::npos) b.value.uniform_(-0.5, 0.5);
  for (const auto& p : m.named_parameters())
    if (p.name.find("conv") != std::string::npos && p.name.find("bias") != std::string::npos) {
      c10::NoGradGuard no_grad;
      p.value.uniform_(-0.3, 0.3);
    }
  return m;
}

torch::jit::Module load_fixture(const std::string& name) {
  return torch::jit::load(testing::fixture(name));
}

std::vector<std::int64_t> weight_shape(const torch::jit::Module& m, const std::string& name) {
  for (const auto& p : m.named_parameters())
    if (p.name == name) return p.value.sizes().vec();
  return {};
}

// What PyTorch would load from the rewritten model's file.
torch::jit::Module saved_and_loaded(const torch::jit::Module& m, const std::string& file) {
  const std::string path = ::testing::TempDir() + "/" + file;
  m.save(path);
  return torch::jit::load(path);
}

}  // namespace

TEST(GraphRewritesTest, HiddenLinearSizesAreFoundThroughActivationsAndDropout) {
  const auto m = load_fixture("odd_mlp.pt");
  EXPECT_EQ(hidden_linear_sizes(m), (std::vector<std::int64_t>{300, 100}));
}

TEST(GraphRewritesTest, PaddingHiddenSizesKeepsTheOutputAndGrowsOnlyTheHiddenDimensions) {
  auto m = load_fixture("odd_mlp.pt");
  const std::vector<c10::IValue> inputs = {at::randn({4, 784})};
  const at::Tensor before = run(m, inputs);
  auto padded = m.clone();
  EXPECT_EQ(pad_hidden_linear_sizes(padded, 16), 2);
  EXPECT_EQ(weight_shape(padded, "0.weight"), (std::vector<std::int64_t>{304, 784}));
  EXPECT_EQ(weight_shape(padded, "0.bias"), (std::vector<std::int64_t>{304}));
  EXPECT_EQ(weight_shape(padded, "3.weight"), (std::vector<std::int64_t>{112, 304}));
  EXPECT_EQ(weight_shape(padded, "5.weight"), (std::vector<std::int64_t>{10, 112}));
  EXPECT_EQ(weight_shape(m, "0.weight"), (std::vector<std::int64_t>{300, 784}));  // a clone
  const at::Tensor after = run(padded, inputs);
  EXPECT_EQ(after.sizes(), before.sizes());
  EXPECT_TRUE(at::allclose(after, before, 1e-5, 1e-6));
  EXPECT_EQ(hidden_linear_sizes(padded), (std::vector<std::int64_t>{304, 112}));
}

TEST(GraphRewritesTest, SizesThatAreMultiplesAlreadyAreNotPadded) {
  auto m = load_fixture("odd_mlp.pt");
  EXPECT_EQ(pad_hidden_linear_sizes(m, 3), 1);  // 300 is a multiple of 3; 100 becomes 102
  EXPECT_EQ(hidden_linear_sizes(m), (std::vector<std::int64_t>{300, 102}));
  auto again = load_fixture("odd_mlp.pt");
  EXPECT_EQ(pad_hidden_linear_sizes(again, 4), 0);
  EXPECT_EQ(weight_shape(again, "0.weight"), (std::vector<std::int64_t>{300, 784}));
}

TEST(GraphRewritesTest, ThePaddedModelSavesAndLoadsWithTheSameOutput) {
  auto m = load_fixture("odd_mlp.pt");
  const std::vector<c10::IValue> inputs = {at::randn({2, 784})};
  auto padded = m.clone();
  pad_hidden_linear_sizes(padded, 64);
  auto back = saved_and_loaded(padded, "odd_mlp_padded.pt");
  EXPECT_TRUE(at::allclose(run(back, inputs), run(m, inputs), 1e-5, 1e-6));
}

TEST(GraphRewritesTest, TiedWeightsAndSizesANormReadsAsAWholeAreNotPadded) {
  auto m = load_fixture("not_paddable.pt");
  EXPECT_TRUE(hidden_linear_sizes(m).empty());
  EXPECT_EQ(pad_hidden_linear_sizes(m, 16), 0);
}

TEST(GraphRewritesTest, AFrozenModelsConstantWeightsAreNotPadded) {
  auto frozen = torch::jit::freeze(load_fixture("odd_mlp.pt"));
  EXPECT_TRUE(hidden_linear_sizes(frozen).empty());
  EXPECT_EQ(pad_hidden_linear_sizes(frozen, 16), 0);
}

TEST(GraphRewritesTest, AWeightReadAnywhereElseIsNotPadded) {
  const auto module = [](const std::string& tail) {
    torch::jit::Module m("__torch__.ReadTwice");
    m.register_attribute("training", c10::BoolType::get(), false);
    m.register_parameter("w1", at::randn({30, 16}), false);
    m.register_parameter("w2", at::randn({10, 30}), false);
    m.define("def forward(self, x):\n"
             "    h = torch.relu(torch.linear(x, self.w1))\n"
             "    return torch.linear(h, self.w2)" + tail + "\n");
    return m;
  };
  EXPECT_EQ(hidden_linear_sizes(module("")), (std::vector<std::int64_t>{30}));
  EXPECT_TRUE(hidden_linear_sizes(module(" + self.w1.sum()")).empty());
}

TEST(GraphRewritesTest, FoldingTheConvBiasesKeepsTheOutputAndLeavesNoneBeforeABatchNorm) {
  auto m = convbn_with_statistics();
  const auto inputs = make_inputs(find_builtin("convbn").default_inputs, 2, 0);
  const at::Tensor before = run(m, inputs);
  EXPECT_EQ(count_conv_bias_before_batch_norm(m), 3);
  auto folded = m.clone();
  EXPECT_EQ(fold_conv_bias_into_batch_norm(folded), 3);
  EXPECT_EQ(count_conv_bias_before_batch_norm(folded), 0);
  EXPECT_TRUE(at::allclose(run(folded, inputs), before, 1e-4, 1e-5));
}

TEST(GraphRewritesTest, TheFoldedModelSavesAndLoadsWithTheSameOutput) {
  auto m = convbn_with_statistics();
  const auto inputs = make_inputs(find_builtin("convbn").default_inputs, 2, 0);
  auto folded = m.clone();
  fold_conv_bias_into_batch_norm(folded);
  auto back = saved_and_loaded(folded, "convbn_folded.pt");
  EXPECT_TRUE(at::allclose(run(back, inputs), run(m, inputs), 1e-4, 1e-5));
}

TEST(GraphRewritesTest, AModelWithoutTheFoldablePatternIsLeftAsItIs) {
  auto m = build_builtin("mlp");
  EXPECT_EQ(count_conv_bias_before_batch_norm(m), 0);
  EXPECT_EQ(fold_conv_bias_into_batch_norm(m), 0);
}

TEST(GraphRewritesTest, KnownValuesFollowAttributeChainsFromTheModule) {
  auto m = build_builtin("convbn");
  auto graph = m.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  int weights = 0;
  for (const auto* n : graph->nodes())
    if (n->kind() == c10::aten::batch_norm) {
      const auto mean = known_value(n->input(3), m);
      ASSERT_TRUE(mean && mean->isTensor());
      ++weights;
    }
  EXPECT_EQ(weights, 3);
}

}  // namespace torchperf
