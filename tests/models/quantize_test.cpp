#include "torchperf/models/quantize.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include "support/test_support.h"
#include "torchperf/compat/torch_compat.h"
#include "torchperf/error.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/models/model.h"

namespace torchperf {
namespace {

using testing::fixture;

torch::jit::Module load(const std::string& name) { return torch::jit::load(fixture(name)); }

at::Tensor forward(torch::jit::Module& m, const at::Tensor& x) {
  c10::InferenceMode inference;
  return m.forward({x}).toTensor();
}

bool runs_operator(torch::jit::Module& m, const std::string& op) {
  auto graph = m.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  const auto symbol = c10::Symbol::fromQualString(op);
  for (const auto* n : graph->nodes())
    if (n->kind() == symbol) return true;
  return false;
}

}  // namespace

TEST(QuantizeTest, EveryLinearOfLayersSharingATypeRunsInt8WithItsOwnWeights) {
  auto m = load("linear_stack.pt");
  const at::Tensor x = at::randn({8, 32});
  const at::Tensor reference = forward(m, x);
  auto q = m.clone();
  const QuantizedLayers layers = quantize_linear_dynamic(q);
  EXPECT_EQ(layers.linear, 2);
  EXPECT_TRUE(layers.skipped.empty());
  EXPECT_TRUE(runs_operator(q, "quantized::linear_dynamic"));
  EXPECT_FALSE(runs_operator(q, "aten::linear"));
  const at::Tensor out = forward(q, x);
  ASSERT_EQ(out.sizes(), reference.sizes());  // each layer kept its own shape: 64 then 16
  EXPECT_LT((out - reference).abs().max().item<double>(),
            0.05 * reference.abs().max().item<double>());
}

TEST(QuantizeTest, MatchesPyTorchsOwnDynamicQuantizationOfTheSameModel) {
  // Python's quantize_dynamic_jit with per_channel_dynamic_qconfig, saved by the fixtures, both
  // on the engine LibTorch starts with.
  auto ours = load("linear_stack.pt");
  quantize_linear_dynamic(ours);
  auto theirs = load("linear_stack_int8_pytorch.pt");
  const at::Tensor x = at::randn({8, 32});
  const at::Tensor a = forward(ours, x), b = forward(theirs, x);
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-3 * b.abs().max().item<double>() + 1e-5);
}

TEST(QuantizeTest, LstmAndGruLayersRunTheirQuantizedOperators) {
  auto m = load("recurrent.pt");
  const at::Tensor x = at::randn({4, 20, 32});
  const at::Tensor reference = forward(m, x);
  auto q = m.clone();
  const QuantizedLayers layers = quantize_linear_dynamic(q);
  EXPECT_EQ(layers.recurrent, 4);  // two of them share a TorchScript type
  EXPECT_EQ(layers.linear, 1);
  EXPECT_TRUE(runs_operator(q, "aten::quantized_lstm"));
  EXPECT_TRUE(runs_operator(q, "aten::quantized_gru"));
  EXPECT_FALSE(runs_operator(q, "aten::lstm"));
  EXPECT_FALSE(runs_operator(q, "aten::gru"));
  const at::Tensor out = forward(q, x);
  ASSERT_EQ(out.sizes(), reference.sizes());
  EXPECT_LT((out - reference).abs().max().item<double>(),
            0.05 * reference.abs().max().item<double>());
}

TEST(QuantizeTest, RecurrentLayersMatchPyTorchsOwnDynamicQuantization) {
  // Python's quantize_dynamic of the same model (LSTM, GRU and Linear, per-channel weights),
  // scripted and saved by the fixtures.
  auto ours = load("recurrent.pt");
  quantize_linear_dynamic(ours);
  auto theirs = load("recurrent_int8_pytorch.pt");
  const at::Tensor x = at::randn({4, 20, 32});
  const at::Tensor a = forward(ours, x), b = forward(theirs, x);
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-3 * b.abs().max().item<double>() + 1e-5);
  const std::string path = ::testing::TempDir() + "/recurrent_int8.pt";
  ours.save(path);
  auto back = torch::jit::load(path);
  EXPECT_TRUE(at::allclose(forward(back, x), a));
}

TEST(QuantizeTest, RecurrentLayersOnPackedSequencesMatchPyTorchsQuantization) {
  auto ours = load("packed_recurrent.pt");
  EXPECT_EQ(quantize_linear_dynamic(ours).recurrent, 2);
  auto theirs = load("packed_recurrent_int8_pytorch.pt");
  const std::vector<c10::IValue> inputs = {at::randn({3, 7, 16}),
                                           at::tensor(std::vector<std::int64_t>{7, 4, 2})};
  c10::InferenceMode inference;
  const at::Tensor a = ours.forward(inputs).toTensor(), b = theirs.forward(inputs).toTensor();
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-3 * b.abs().max().item<double>() + 1e-5);
}

TEST(QuantizeTest, TheQuantizedModelSavesAndLoadsAgain) {
  auto q = load("linear_stack.pt");
  quantize_linear_dynamic(q);
  const std::string path = ::testing::TempDir() + "/linear_stack_int8.pt";
  q.save(path);
  auto back = torch::jit::load(path);
  const at::Tensor x = at::randn({4, 32});
  EXPECT_TRUE(at::allclose(forward(back, x), forward(q, x)));
}

TEST(QuantizeTest, EachBuiltInMlpLayerIsQuantizedAndFreezingKeepsIt) {
  auto q = build_builtin("mlp");
  const at::Tensor x = at::randn({4, 784});
  const at::Tensor reference = forward(q, x);
  EXPECT_EQ(quantize_linear_dynamic(q).linear, 3);
  auto frozen = torch::jit::freeze(q);
  EXPECT_TRUE(runs_operator(frozen, "quantized::linear_dynamic"));
  EXPECT_LT((forward(frozen, x) - reference).abs().max().item<double>(),
            0.05 * reference.abs().max().item<double>());
}

TEST(QuantizeTest, AModelWithoutLinearLayersIsRefusedSayingSo) {
  auto m = load("two_inputs.pt");
  try {
    quantize_linear_dynamic(m);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no Linear, LSTM or GRU layer"), std::string::npos) << e.what();
  }
}

TEST(QuantizeTest, EveryBuiltQuantizedEngineRunsTheQuantizedModel) {
  const std::string previous = compat::quantized_engine();
  for (const auto& engine : compat::quantized_engines()) {
    compat::set_quantized_engine(engine);
    auto q = load("linear_stack.pt");
    quantize_linear_dynamic(q);
    const at::Tensor out = forward(q, at::randn({4, 32}));
    EXPECT_TRUE(at::isfinite(out).all().item<bool>()) << engine;
  }
  compat::set_quantized_engine(previous);
}

TEST(QuantizeTest, AnUnknownEngineIsRefusedListingTheBuiltOnes) {
  try {
    compat::set_quantized_engine("tensorrt");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(compat::quantized_engines().front()), std::string::npos);
  }
}

}  // namespace torchperf
