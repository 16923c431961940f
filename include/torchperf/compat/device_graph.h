// CUDA graphs: a call captured once on a side stream and replayed with one launch. The one place
// that names CUDA's graph API (ATen's CUDAGraph); a LibTorch built without CUDA compiles the
// refusal instead, so CPU builds compile and test every caller. Torch-free header.
#pragma once

#include <functional>
#include <memory>

namespace torchperf::compat {

// Whether this LibTorch can capture CUDA graphs (it was built with CUDA).
bool device_graphs_built();

class DeviceGraph {
 public:
  // Throws RuntimeFailure when this LibTorch was built without CUDA.
  explicit DeviceGraph(int device_index);
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;
  // Runs `call` warmup_calls times on a side stream (lazy initialisation, cuDNN's benchmark and
  // the profiling executor happen then, not under capture), then once captured. Throws
  // RuntimeFailure with CUDA's reason when the call cannot be captured (a host synchronisation,
  // a CPU operator).
  void capture(const std::function<void()>& call, int warmup_calls);
  // Launches the captured work on the current stream (the caller synchronises).
  void replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchperf::compat
