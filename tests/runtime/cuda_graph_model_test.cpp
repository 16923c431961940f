// CUDA-graph replay for the C++ runtimes: refused with its reason where it cannot run; on a GPU
// (label cuda), captured once per shape and replayed with the eager result.
#include <gtest/gtest.h>

#include <torch/cuda.h>

#include "torchperf/compat/device_graph.h"
#include "torchperf/error.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/runtime/cuda_graph_model.h"

namespace torchperf {

TEST(CudaGraphModelTest, OnTheCpuTheKnobIsRefusedWithItsReason) {
  std::unique_ptr<Model> model = std::make_unique<TorchScriptModel>(build_builtin("mlp"));
  try {
    replay_cuda_graphs(model, c10::Device(c10::kCPU));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("only on CUDA devices"), std::string::npos) << e.what();
  }
  EXPECT_NE(model->as_torchscript(), nullptr) << "the model is left as it was";
}

TEST(CudaGraphModelTest, ALibTorchWithoutCudaRefusesToCaptureSayingWhy) {
  if (compat::device_graphs_built()) GTEST_SKIP() << "this LibTorch has CUDA";
  try {
    compat::DeviceGraph graph(0);
    FAIL();
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("built with CUDA"), std::string::npos) << e.what();
  }
}

// On a GPU (scripts/gpu_check.sh runs the cuda-labelled tests there).
TEST(CudaGraphModelTest, OnCudaEachShapeIsCapturedOnceAndReplaysTheEagerResult) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const c10::Device gpu(c10::kCUDA, 0);
  torch::NoGradGuard no_grad;
  auto module = build_builtin("convbn");
  module.to(gpu);
  const auto spec = find_builtin("convbn").default_inputs;
  std::vector<c10::IValue> a = make_inputs(spec, 4, 0), b = make_inputs(spec, 4, 1);
  for (auto& v : a) v = v.toTensor().to(gpu);
  for (auto& v : b) v = v.toTensor().to(gpu);
  const at::Tensor eager_a = module.forward(a).toTensor().clone();
  const at::Tensor eager_b = module.forward(b).toTensor().clone();
  std::unique_ptr<Model> model = std::make_unique<TorchScriptModel>(module);
  replay_cuda_graphs(model, gpu);
  auto* graphs = dynamic_cast<CudaGraphModel*>(model.get());
  ASSERT_NE(graphs, nullptr);
  const at::Tensor out_a = model->forward(a).toTensor().clone();
  EXPECT_GE(graphs->capture_s(), 0.0);
  const at::Tensor out_b = model->forward(b).toTensor().clone();  // other tensors: copied in
  EXPECT_EQ(graphs->captured_shapes(), 1u);
  EXPECT_TRUE(at::allclose(out_a, eager_a, 1e-4, 1e-4));
  EXPECT_TRUE(at::allclose(out_b, eager_b, 1e-4, 1e-4));
  std::vector<c10::IValue> c = make_inputs(spec, 8, 0);
  for (auto& v : c) v = v.toTensor().to(gpu);
  model->forward(c);
  EXPECT_EQ(graphs->captured_shapes(), 2u) << "a new batch is a new shape: captured once more";
  // A server's shape plan is done: a shape not captured runs uncaptured, counted, and right.
  graphs->capture_no_more();
  std::vector<c10::IValue> d = make_inputs(spec, 3, 2);
  for (auto& v : d) v = v.toTensor().to(gpu);
  const at::Tensor eager_d = module.forward(d).toTensor().clone();
  const at::Tensor out_d = model->forward(d).toTensor().clone();
  EXPECT_EQ(graphs->captured_shapes(), 2u);
  EXPECT_EQ(graphs->uncaptured_calls(), 1u);
  EXPECT_TRUE(at::allclose(out_d, eager_d, 1e-4, 1e-4));
  model->forward(a);  // a captured shape still replays
  EXPECT_EQ(graphs->uncaptured_calls(), 1u);
}

// On a GPU: a model that fails uncaptured is not reported as a capture that failed.
TEST(CudaGraphModelTest, OnCudaAWarmUpCallThatFailsIsTheModelsOwnFailureNotTheCaptures) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  compat::DeviceGraph graph(0);
  try {
    graph.capture([] { throw std::runtime_error("the model's own error"); }, 1);
    FAIL() << "captured";
  } catch (const RuntimeFailure& e) {
    FAIL() << "told as a capture: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the model's own error");
  }
}

}  // namespace torchperf
