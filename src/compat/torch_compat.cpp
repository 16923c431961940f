#include "torchperf/compat/torch_compat.h"

#include <ATen/Context.h>
#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>
#include <torch/version.h>

#if __has_include(<torch/csrc/jit/codegen/fuser/interface.h>)
#include <torch/csrc/jit/codegen/fuser/interface.h>
#else
// Debian's 1.13 package exports these symbols but does not ship the header that declares them.
namespace torch::jit {
TORCH_API void overrideCanFuseOnCPU(bool value);
TORCH_API bool canFuseOnCPU();
}  // namespace torch::jit
#endif
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>

#include "torchperf/error.h"

#define TORCHPERF_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||            \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace torchperf::compat {
namespace {

at::ScalarType parse_dtype(const std::string& dtype) {
  if (dtype == "bfloat16") return at::kBFloat16;
  if (dtype == "float16") return at::kHalf;
  throw RuntimeFailure("autocast dtype: expected bfloat16 or float16, got '" + dtype + "'");
}

}  // namespace

void set_autocast(DeviceKind device, bool enabled, const std::string& dtype) {
  const at::ScalarType type = parse_dtype(dtype);
#if TORCHPERF_TORCH_AT_LEAST(2, 4)
  const at::DeviceType dev = device == DeviceKind::kCpu ? at::kCPU : at::kCUDA;
  at::autocast::set_autocast_enabled(dev, enabled);
  at::autocast::set_autocast_dtype(dev, type);
#else
  if (device == DeviceKind::kCpu) {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(type);
  } else {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(type);
  }
#endif
}

bool autocast_enabled(DeviceKind device) {
#if TORCHPERF_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device == DeviceKind::kCpu ? at::kCPU : at::kCUDA);
#else
  return device == DeviceKind::kCpu ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

std::string autocast_dtype(DeviceKind device) {
#if TORCHPERF_TORCH_AT_LEAST(2, 4)
  const at::ScalarType type = at::autocast::get_autocast_dtype(device == DeviceKind::kCpu ? at::kCPU : at::kCUDA);
#else
  const at::ScalarType type = device == DeviceKind::kCpu ? at::autocast::get_autocast_cpu_dtype()
                                                         : at::autocast::get_autocast_gpu_dtype();
#endif
  return type == at::kHalf ? "float16" : "bfloat16";
}

void clear_autocast_cache() { at::autocast::clear_cache(); }

FuserState fuser_state() { return {torch::jit::canFuseOnCPU(), torch::jit::tensorExprFuserEnabled()}; }

void set_fuser_state(FuserState state) {
  torch::jit::overrideCanFuseOnCPU(state.cpu_fusion);
  torch::jit::setTensorExprFuserEnabled(state.texpr_fuser);
}

bool cpu_fusion_enabled() {
  return torch::jit::canFuseOnCPU() && torch::jit::tensorExprFuserEnabled();
}

void synchronize(DeviceKind device, int index) {
  if (device == DeviceKind::kCuda) torch::cuda::synchronize(index);
}

bool cuda_available() { return torch::cuda::is_available(); }

int cuda_device_count() { return cuda_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

long cudnn_version() {
  if (!cuda_available()) return 0;
  try {
    return at::detail::getCUDAHooks().versionCuDNN();
  } catch (const std::exception&) {
    return 0;  // CUDA without cuDNN: the version is genuinely absent.
  }
}

std::string torch_version() { return TORCH_VERSION; }

std::string torch_build_config() { return at::show_config(); }

}  // namespace torchperf::compat
