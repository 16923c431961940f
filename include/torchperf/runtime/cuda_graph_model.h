// How the C++ runtimes replay CUDA graphs (the cuda_graphs knob): the forward is captured once per
// input shape into static input and output buffers, and each call copies its inputs in (when they
// are other tensors than the captured ones) and replays the graph. The capture's cost is kept
// apart from the run's, as a compile's is.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "torchperf/compat/device_graph.h"
#include "torchperf/measure/clock.h"
#include "torchperf/models/model.h"

namespace torchperf {

class CudaGraphModel final : public Model {
 public:
  // time: what the captures are timed on.
  CudaGraphModel(std::unique_ptr<Model> inner, c10::Device device, TimeSource& time);
  ~CudaGraphModel() override;

  // The first call of a shape captures (after warm-up calls on a side stream); the rest replay.
  // After capture_no_more(), a shape not captured runs the model uncaptured, and is counted.
  c10::IValue forward(const std::vector<c10::IValue>& inputs) override;
  std::vector<std::string> input_names() const override { return inner_->input_names(); }
  std::size_t required_inputs() const override { return inner_->required_inputs(); }
  bool is_training() const override { return inner_->is_training(); }
  void set_training(bool training) override { inner_->set_training(training); }
  void to(c10::Device device) override { inner_->to(device); }
  void to(c10::ScalarType dtype) override { inner_->to(dtype); }
  TorchScriptModel* as_torchscript() override { return inner_->as_torchscript(); }
  ExportedProgramModel* as_exported() override { return inner_->as_exported(); }

  // Seconds the captures took (warm-up calls included), -1 before the first.
  double capture_s() const { return capture_s_; }
  std::size_t captured_shapes() const { return graphs_.size(); }
  // A server's shape plan captured what it planned: no capture while serving (a capture takes
  // memory and seconds a request would wait for, and the plan's budget is spent).
  void capture_no_more() { capturing_ = false; }
  std::size_t uncaptured_calls() const { return uncaptured_calls_; }

 private:
  struct Captured {
    std::unique_ptr<compat::DeviceGraph> graph;
    std::vector<c10::IValue> inputs;  // the static buffers the graph reads
    c10::IValue output;               // and writes
  };
  std::unique_ptr<Model> inner_;
  c10::Device device_;
  TimeSource& time_;
  std::map<std::vector<std::int64_t>, Captured> graphs_;
  double capture_s_ = -1;
  bool capturing_ = true;
  std::size_t uncaptured_calls_ = 0;
};

// The workload's model wrapped (a ConfigError, with the reason, on a CPU device).
void replay_cuda_graphs(std::unique_ptr<Model>& model, c10::Device device,
                        TimeSource& time = steady_time());

}  // namespace torchperf
