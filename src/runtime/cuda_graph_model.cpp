#include "torchperf/runtime/cuda_graph_model.h"


#include "torchperf/error.h"

namespace torchperf {
namespace {

// The shape signature of a call: every tensor input's sizes, a -1 between inputs.
std::vector<std::int64_t> shape_key(const std::vector<c10::IValue>& inputs) {
  std::vector<std::int64_t> key;
  for (const auto& v : inputs) {
    if (v.isTensor())
      for (const auto d : v.toTensor().sizes()) key.push_back(d);
    key.push_back(-1);
  }
  return key;
}

// Warm-up calls before a capture: TorchScript's profiling executor settles on its optimised graph
// after two, and cuDNN's benchmark picks its algorithms on the first.
constexpr int kWarmupCalls = 3;

}  // namespace

CudaGraphModel::CudaGraphModel(std::unique_ptr<Model> inner, c10::Device device, TimeSource& time)
    : inner_(std::move(inner)), device_(device), time_(time) {}

CudaGraphModel::~CudaGraphModel() = default;

c10::IValue CudaGraphModel::forward(const std::vector<c10::IValue>& inputs) {
  const auto key = shape_key(inputs);
  auto it = graphs_.find(key);
  if (it == graphs_.end() && !capturing_) {
    ++uncaptured_calls_;
    return inner_->forward(inputs);
  }
  if (it == graphs_.end()) {
    const auto start = time_.now();
    Captured c;
    c.inputs = inputs;  // the caller's tensors become the static buffers
    c.graph = std::make_unique<compat::DeviceGraph>(device_.index() < 0 ? 0 : device_.index());
    c.graph->capture([&] { c.output = inner_->forward(c.inputs); }, kWarmupCalls);
    capture_s_ = std::max(0.0, capture_s_) + to_seconds(time_.now() - start);
    it = graphs_.emplace(key, std::move(c)).first;
  }
  Captured& c = it->second;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].isTensor()) continue;
    const auto& given = inputs[i].toTensor();
    auto& buffer = c.inputs[i].toTensor();
    if (!given.is_same(buffer)) buffer.copy_(given);
  }
  c.graph->replay();
  return c.output;
}

void replay_cuda_graphs(std::unique_ptr<Model>& model, c10::Device device, TimeSource& time) {
  if (!device.is_cuda())
    throw ConfigError("cuda_graphs=on: CUDA graphs exist only on CUDA devices (this run is on " +
                      device.str() + ")");
  model = std::make_unique<CudaGraphModel>(std::move(model), device, time);
}

}  // namespace torchperf
