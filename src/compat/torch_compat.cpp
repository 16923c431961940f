#include "torchperf/compat/torch_compat.h"

#include <cctype>
#include <utility>

#include <ATen/Context.h>
#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <torch/csrc/jit/codegen/fuser/interface.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/script.h>

#include "torchperf/error.h"

// Present in CUDA builds of LibTorch only; a CPU build compiles the fallbacks below.
#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && defined(TORCHPERF_WITH_CUDA_ALLOCATOR)
#include <c10/cuda/CUDACachingAllocator.h>
#define TORCHPERF_HAS_CUDA_ALLOCATOR 1
#endif

#define TORCHPERF_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||            \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
// The oldest LibTorch torchperf supports (cmake/FindTorchperfLibTorch.cmake says so at configure
// time; this says it again for a build that bypassed that check).
static_assert(TORCHPERF_TORCH_AT_LEAST(2, 11), "torchperf needs LibTorch >= 2.11");

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
  const at::DeviceType dev = device == DeviceKind::kCpu ? at::kCPU : at::kCUDA;
  at::autocast::set_autocast_enabled(dev, enabled);
  at::autocast::set_autocast_dtype(dev, type);
}

bool autocast_enabled(DeviceKind device) {
  return at::autocast::is_autocast_enabled(device == DeviceKind::kCpu ? at::kCPU : at::kCUDA);
}

std::string autocast_dtype(DeviceKind device) {
  const at::ScalarType type =
      at::autocast::get_autocast_dtype(device == DeviceKind::kCpu ? at::kCPU : at::kCUDA);
  if (type == at::kHalf) return "float16";
  if (type == at::kBFloat16) return "bfloat16";
  return c10::toString(type);
}

void clear_autocast_cache() { at::autocast::clear_cache(); }

FuserState fuser_state() {
  return {torch::jit::canFuseOnCPU(), torch::jit::tensorExprFuserEnabled()};
}

void set_fuser_state(FuserState state) {
  torch::jit::overrideCanFuseOnCPU(state.cpu_fusion);
  torch::jit::setTensorExprFuserEnabled(state.texpr_fuser);
}

bool cpu_fuser_available() {
  static const bool available = [] {
    const FuserState previous = fuser_state();
    set_fuser_state({true, true});
    bool ok = true;
    try {
      torch::jit::Module probe("__torch__.torchperf.FuserProbe");
      probe.define(R"(
def forward(self, x):
    return torch.relu(x * 2.0 + 1.0) * x
)");
      torch::NoGradGuard no_grad;
      const std::vector<c10::IValue> inputs{torch::ones({4, 4})};
      for (int i = 0; i < 4; ++i) probe.forward(inputs);  // profiling runs, then fusion
    } catch (const std::exception&) {
      ok = false;
    }
    set_fuser_state(previous);
    return ok;
  }();
  return available;
}

bool cpu_fusion_enabled() {
  return torch::jit::canFuseOnCPU() && torch::jit::tensorExprFuserEnabled();
}

namespace {

std::string engine_name(at::QEngine e) {
  std::string name = c10::toString(e);
  for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return name;
}

}  // namespace

std::vector<std::string> quantized_engines() {
  std::vector<std::string> out;
  for (const auto e : at::globalContext().supportedQEngines())
    if (e != at::QEngine::NoQEngine) out.push_back(engine_name(e));
  return out;
}

std::string quantized_engine() { return engine_name(at::globalContext().qEngine()); }

void set_quantized_engine(const std::string& engine) {
  std::string known;
  for (const auto e : at::globalContext().supportedQEngines()) {
    if (engine_name(e) == engine) return at::globalContext().setQEngine(e);
    known += (known.empty() ? "" : ", ") + engine_name(e);
  }
  throw ConfigError("quantized engine '" + engine + "' is not built into this LibTorch; it has: " +
                    (known.empty() ? std::string("none") : known));
}

bool graph_executor_optimize() { return torch::jit::getGraphExecutorOptimize(); }

void set_graph_executor_optimize(bool optimize) { torch::jit::setGraphExecutorOptimize(optimize); }

void synchronize(DeviceKind device, int index) {
  if (device == DeviceKind::kCuda) torch::cuda::synchronize(index);
}

#ifdef TORCHPERF_HAS_CUDA_ALLOCATOR
namespace {
// The caching allocator's statistics; index 0 of each is StatType::AGGREGATE in every version
// (the enum moved namespaces in 2.x).
auto device_stats(int index) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
}
}  // namespace
#endif

std::int64_t cuda_peak_allocated_bytes(int index) {
#ifdef TORCHPERF_HAS_CUDA_ALLOCATOR
  return device_stats(index).allocated_bytes[0].peak;
#else
  (void)index;
  return -1;
#endif
}

std::int64_t cuda_reserved_bytes(int index) {
#ifdef TORCHPERF_HAS_CUDA_ALLOCATOR
  return device_stats(index).reserved_bytes[0].current;
#else
  (void)index;
  return -1;
#endif
}

void reset_cuda_peak(int index) {
#ifdef TORCHPERF_HAS_CUDA_ALLOCATOR
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
#endif
}

namespace {

// The device's free and total memory as CUDA says, {-1, -1} without a CUDA allocator or device.
std::pair<std::int64_t, std::int64_t> cuda_memory_info(int index) {
#ifdef TORCHPERF_HAS_CUDA_ALLOCATOR
  try {
    const auto [free, total] = c10::cuda::CUDACachingAllocator::get()->getMemoryInfo(
        static_cast<c10::DeviceIndex>(index));
    return {static_cast<std::int64_t>(free), static_cast<std::int64_t>(total)};
  } catch (const std::exception&) {
  }
#endif
  (void)index;
  return {-1, -1};
}

}  // namespace

std::int64_t cuda_memory_capacity_bytes(int index) { return cuda_memory_info(index).second; }

std::int64_t cuda_available_bytes(int index) {
  const std::int64_t free = cuda_memory_info(index).first;
#ifdef TORCHPERF_HAS_CUDA_ALLOCATOR
  // What the caching allocator holds unallocated is the process's to reuse.
  if (free >= 0) {
    const auto stats = device_stats(index);
    return free + stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;
  }
#endif
  return free;
}

bool cuda_supports_bf16() {
  // cuDNN's bf16 convolutions come with compute capability 8.0 (Ampere), as bf16 tensor cores do.
  return cuda_available() && at::detail::getCUDAHooks().supportsBFloat16ConvolutionWithCuDNNv8();
}

bool cuda_available() { return torch::cuda::is_available(); }

int cuda_device_count() {
  return cuda_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

long cudnn_version() {
  if (!cuda_available()) return 0;
  try {
    return at::detail::getCUDAHooks().versionCuDNN();
  } catch (const std::exception&) {
    return 0;  // CUDA without cuDNN: the version is genuinely absent.
  }
}

std::string torch_version() { return TORCH_VERSION; }

std::string torch_library_version() {
  const std::string config = at::show_config();
  const std::string key = "TORCH_VERSION=";
  const auto at = config.find(key);
  if (at == std::string::npos) return "";
  const auto begin = at + key.size();
  return config.substr(begin, config.find_first_of(", \n", begin) - begin);
}

std::string torch_build_config() { return at::show_config(); }

}  // namespace torchperf::compat
