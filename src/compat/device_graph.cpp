#include "torchperf/compat/device_graph.h"

#include <string>

#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"

// A CUDA LibTorch (it links c10_cuda: src/CMakeLists.txt defines TORCHPERF_WITH_CUDA_ALLOCATOR).
#if __has_include(<ATen/cuda/CUDAGraph.h>) && defined(TORCHPERF_WITH_CUDA_ALLOCATOR)
#define TORCHPERF_HAS_DEVICE_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace torchperf::compat {

#ifdef TORCHPERF_HAS_DEVICE_GRAPHS

bool device_graphs_built() { return true; }

struct DeviceGraph::Impl {
  explicit Impl(int device)
      : device(static_cast<c10::DeviceIndex>(device)),
        stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, this->device)) {}
  c10::DeviceIndex device;
  c10::cuda::CUDAStream stream;
  at::cuda::CUDAGraph graph;
};

DeviceGraph::DeviceGraph(int device_index) : impl_(std::make_unique<Impl>(device_index)) {}
DeviceGraph::~DeviceGraph() = default;

void DeviceGraph::capture(const std::function<void()>& call, int warmup_calls) {
  // A warm-up call that fails is the model's own failure, told as such: it runs uncaptured.
  c10::cuda::device_synchronize();
  {
    // The side stream: capture must not run on the legacy default stream.
    c10::cuda::CUDAStreamGuard on_side(impl_->stream);
    for (int i = 0; i < warmup_calls; ++i) call();
  }
  c10::cuda::device_synchronize();  // an asynchronous error of a warm-up call surfaces here
  try {
    {
      c10::cuda::CUDAStreamGuard on_side(impl_->stream);
      impl_->graph.capture_begin();
      try {
        call();
      } catch (...) {
        try {
          impl_->graph.capture_end();
        } catch (...) {
        }
        throw;
      }
      impl_->graph.capture_end();
    }
    c10::cuda::device_synchronize();
  } catch (const std::exception& e) {
    throw RuntimeFailure("capturing a CUDA graph failed: " + concise_error_message(e.what()));
  }
}

void DeviceGraph::replay() { impl_->graph.replay(); }

#else

bool device_graphs_built() { return false; }

struct DeviceGraph::Impl {};

DeviceGraph::DeviceGraph(int) {
  throw RuntimeFailure("CUDA graphs need a LibTorch built with CUDA; this one has none");
}
DeviceGraph::~DeviceGraph() = default;
void DeviceGraph::capture(const std::function<void()>&, int) {}
void DeviceGraph::replay() {}

#endif

}  // namespace torchperf::compat
