#include "torchperf/measure/environment.h"

#include <ATen/Parallel.h>
#include <link.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "torchperf/compat/torch_compat.h"

namespace torchperf {
namespace {

std::string first_cpuinfo_value(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        return value;
      }
    }
  }
  return "";
}

std::vector<std::string> relevant_isa() {
  static const std::vector<std::string> wanted = {
      "sse4_2",   "avx",      "avx2",        "fma",         "f16c",        "avx512f",
      "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
      "amx_bf16", "amx_int8", "asimd",       "sve"};
  std::istringstream flags(first_cpuinfo_value("flags") + " " + first_cpuinfo_value("Features"));
  std::set<std::string> present;
  for (std::string f; flags >> f;) present.insert(f);
  std::vector<std::string> out;
  for (const auto& w : wanted)
    if (present.count(w)) out.push_back(w);
  return out;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// NVIDIA's driver publishes GPU names and its version under /proc without needing CUDA headers.
void read_nvidia_proc(Environment& env) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path gpus("/proc/driver/nvidia/gpus");
  if (fs::is_directory(gpus, ec)) {
    for (const auto& entry : fs::directory_iterator(gpus, ec)) {
      std::ifstream info(entry.path() / "information");
      for (std::string line; std::getline(info, line);) {
        if (line.rfind("Model:", 0) == 0) {
          auto name = line.substr(6);
          name.erase(0, name.find_first_not_of(" \t"));
          env.gpu_names.push_back(name);
        }
      }
    }
  }
  env.gpu_driver = read_first_line("/proc/driver/nvidia/version");
}

int collect_library(dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name && *info->dlpi_name)
    static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
  return 0;
}

}  // namespace

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

std::string to_string(BlasKind kind) {
  switch (kind) {
    case BlasKind::kReference:
      return "reference (netlib)";
    case BlasKind::kOpenBlas:
      return "OpenBLAS";
    case BlasKind::kMkl:
      return "MKL";
    case BlasKind::kBlis:
      return "BLIS";
    case BlasKind::kOther:
      return "other";
    case BlasKind::kNone:
      return "none found";
  }
  return "unknown";
}

BlasKind classify_blas_path(const std::string& path) {
  const auto name = std::filesystem::path(path).filename().string();
  const auto has = [&](const char* s) { return path.find(s) != std::string::npos; };
  if (has("openblas")) return BlasKind::kOpenBlas;
  if (has("mkl")) return BlasKind::kMkl;
  if (has("blis")) return BlasKind::kBlis;
  // Debian's reference BLAS lives in .../blas/libblas.so.3 (the alternative's lowest priority).
  if (has("/blas/libblas.so") || name.rfind("libblas.so", 0) == 0) return BlasKind::kReference;
  if (has("blas")) return BlasKind::kOther;
  return BlasKind::kNone;
}

BlasLibrary detect_loaded_blas() {
  std::vector<std::string> libraries;
  dl_iterate_phdr(collect_library, &libraries);
  BlasLibrary best;
  for (const auto& lib : libraries) {
    std::error_code ec;
    const auto resolved = std::filesystem::canonical(lib, ec);
    const std::string path = ec ? lib : resolved.string();
    const BlasKind kind = classify_blas_path(path);
    if (kind == BlasKind::kNone) continue;
    // LibTorch links libblas.so.3; the alternative decides what that is. A separately loaded
    // optimised library (libopenblas) is only reported if no libblas was found.
    const bool is_libblas =
        std::filesystem::path(lib).filename().string().rfind("libblas.so", 0) == 0;
    if (best.kind == BlasKind::kNone || is_libblas) best = {kind, path};
  }
  return best;
}

std::vector<std::string> environment_warnings(const Environment& env) {
  std::vector<std::string> warnings;
  if (!env.cpu_governor.empty() && env.cpu_governor != "performance")
    warnings.push_back("CPU frequency scaling governor is '" + env.cpu_governor +
                       "', not 'performance': clock speed may change during the run");
  if (env.usable_cores > 0 && env.load_average_1m > env.usable_cores)
    warnings.push_back("the machine was busy before this run (1-minute load " +
                       std::to_string(env.load_average_1m).substr(0, 4) + " on " +
                       std::to_string(env.usable_cores) +
                       " cores): other work competes for the CPU");
  if (env.blas.kind == BlasKind::kReference)
    warnings.push_back("BLAS is the reference (netlib) implementation (" + env.blas.path +
                       "): fp32 matmul/Linear run 30-50x slower than with OpenBLAS. Run "
                       "scripts/install-deps.sh, or "
                       "update-alternatives --set libblas.so.3-x86_64-linux-gnu "
                       "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3");
  if (env.torchperf_build_type != "Release" && env.torchperf_build_type != "RelWithDebInfo")
    warnings.push_back("torchperf was built as '" + env.torchperf_build_type +
                       "', not optimised: harness overhead is higher than it should be");
#ifndef NDEBUG
  warnings.push_back("torchperf was built with assertions on (NDEBUG not defined)");
#endif
#if defined(__SANITIZE_ADDRESS__)
  warnings.push_back("torchperf was built with AddressSanitizer: timings are not representative");
#endif
  if (env.usable_cores > 0 && env.intra_op_threads > env.usable_cores)
    warnings.push_back("intra-op threads (" + std::to_string(env.intra_op_threads) +
                       ") exceed the usable cores (" + std::to_string(env.usable_cores) +
                       "): oversubscription makes timings noisy");
  return warnings;
}

Environment capture_environment() {
  Environment env;
  env.torchperf_version = TORCHPERF_VERSION;
  env.torchperf_build_type = TORCHPERF_BUILD_TYPE;
  env.torchperf_git_commit = torchperf_git_commit();
  env.cpu_governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  std::istringstream(read_first_line("/proc/loadavg")) >> env.load_average_1m;
  env.torch_version = compat::torch_version();
  env.torch_build_config = compat::torch_build_config();
  env.cpu_model = first_cpuinfo_value("model name");
  env.cpu_isa = relevant_isa();
  env.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  env.usable_cores = usable_cores();
  env.intra_op_threads = at::get_num_threads();
  env.inter_op_threads = at::get_num_interop_threads();
  env.blas = detect_loaded_blas();
  env.cuda_available = compat::cuda_available();
  env.cuda_devices = compat::cuda_device_count();
  env.cudnn_version = compat::cudnn_version();
  read_nvidia_proc(env);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  env.hostname = host;
  utsname uts{};
  if (uname(&uts) == 0) env.kernel = std::string(uts.sysname) + " " + uts.release;
  for (const char* name :
       {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES",
        "KMP_AFFINITY", "GOMP_CPU_AFFINITY", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_ARENA_MAX", "LD_PRELOAD", "DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA",
        "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_CUDNN_V8_API_ENABLED"}) {
    if (const char* value = std::getenv(name)) env.variables[name] = value;
  }
  env.warnings = environment_warnings(env);
  return env;
}

}  // namespace torchperf
