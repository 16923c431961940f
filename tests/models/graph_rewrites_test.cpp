#include "torchperf/models/graph_rewrites.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/passes/inliner.h>

#include "torchperf/models/builtin_models.h"
#include "torchperf/models/inputs.h"

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

}  // namespace

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
  const std::string path = ::testing::TempDir() + "/convbn_folded.pt";
  folded.save(path);
  auto back = torch::jit::load(path);
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
