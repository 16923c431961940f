// The one place that knows how LibTorch versions differ (2.11, the GPU machine's, to 2.13, the
// .venv's; older ones are refused when torchperf is configured).
// Everything else calls these functions and stays version-agnostic; the header itself is
// torch-free so that callers do not pay for torch includes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchperf::compat {

enum class DeviceKind { kCpu, kCuda };

// Turns autocast on or off for one device type, with the given reduced dtype
// ("bfloat16"/"float16").
void set_autocast(DeviceKind device, bool enabled, const std::string& dtype);
bool autocast_enabled(DeviceKind device);
std::string autocast_dtype(DeviceKind device);
void clear_autocast_cache();

// The JIT fuser switches: whether the TensorExpr fuser runs, and whether it may fuse on CPU (off
// by default in LibTorch). Saved and restored whole, so a knob's undo leaves no trace.
struct FuserState {
  bool cpu_fusion = false;
  bool texpr_fuser = true;
};
FuserState fuser_state();
void set_fuser_state(FuserState state);
bool cpu_fusion_enabled();
// Whether the TensorExpr fuser can compile fused kernels for CPU in this LibTorch: it needs LLVM,
// which Debian's build lacks. Found out once per process by fusing a tiny scripted function.
bool cpu_fuser_available();

// Whether TorchScript's graph executor optimizes graphs (profiles, specializes, differentiates
// subgraphs, fuses) or runs them op by op as eager PyTorch does (torch.jit.optimized_execution).
// The switch belongs to the calling thread, which must be the one that runs the model.
bool graph_executor_optimize();
void set_graph_executor_optimize(bool optimize);

// The quantized engines this LibTorch was built with, lower case ("fbgemm", "qnnpack", "onednn",
// "x86" from 2.0), the one in use, and a switch (process-wide; weights are packed for the engine
// in use when they are packed, and run with it). set_quantized_engine throws ConfigError for an
// engine not built in.
std::vector<std::string> quantized_engines();
std::string quantized_engine();
void set_quantized_engine(const std::string& engine);

// Waits for all work queued on the device; a no-op on CPU.
void synchronize(DeviceKind device, int index = -1);

// The CUDA caching allocator's peak of allocated bytes since the last reset, or -1 where this
// LibTorch has no CUDA allocator (a CPU build): the process RSS is the CPU measure instead.
std::int64_t cuda_peak_allocated_bytes(int index);
void reset_cuda_peak(int index);
// The memory the CUDA caching allocator holds now (reserved: what CUDA graphs' private pools keep
// too), or -1 without a CUDA allocator.
std::int64_t cuda_reserved_bytes(int index);
// The device's total memory, or -1 without a CUDA allocator.
std::int64_t cuda_memory_capacity_bytes(int index);
// The device memory a new allocation may still take: what the device has free plus what the
// caching allocator holds unallocated; -1 without a CUDA allocator.
std::int64_t cuda_available_bytes(int index);
// Whether the CUDA device computes in bf16 (compute capability 8.0 on); false without CUDA.
bool cuda_supports_bf16();

bool cuda_available();
int cuda_device_count();
// cuDNN version as an integer (e.g. 8902), or 0 when there is none.
long cudnn_version();

// The version of the LibTorch headers torchperf was compiled with ("2.13.0"), and of the library
// loaded at run time, as it describes itself (its build settings' TORCH_VERSION): the two differ
// when the binary found another LibTorch than the one it was built against.
std::string torch_version();
std::string torch_library_version();
// LibTorch's own build description (compiler, flags, BLAS, backends).
std::string torch_build_config();

}  // namespace torchperf::compat
