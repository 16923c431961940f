#include "torchperf/measure/environment.h"

#include <ATen/Parallel.h>
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

std::vector<std::string> relevant_isa_flags() {
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

}  // namespace

std::vector<std::string> cpu_isa_flags() {
  static const std::vector<std::string> flags = relevant_isa_flags();  // fixed for the process
  return flags;
}

std::string cpu_vendor() {
  static const std::string vendor = [] {
    std::ifstream info("/proc/cpuinfo");
    for (std::string line; std::getline(info, line);)
      if (line.rfind("vendor_id", 0) == 0 && line.find(':') != std::string::npos) {
        std::string v = line.substr(line.find(':') + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    return std::string();
  }();
  return vendor;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

namespace {

// The text after `key` on the first line that holds it, up to the line's end or `stop`.
std::string value_after(const std::string& text, const std::string& key, char stop = '\n') {
  const auto at = text.find(key);
  if (at == std::string::npos) return "";
  const auto begin = at + key.size();
  const auto end = text.find_first_of(std::string("\n") + stop, begin);
  std::string value = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.pop_back();
  return value;
}

// The line that starts (after "  - ") with one of the prefixes, without the bullet.
std::string bullet_line(const std::string& text, std::initializer_list<const char*> prefixes) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto start = line.find_first_not_of(" -");
    if (start == std::string::npos) continue;
    const std::string item = line.substr(start);
    for (const char* p : prefixes)
      if (item.rfind(p, 0) == 0) return item;
  }
  return "";
}

}  // namespace

TorchBuild parse_torch_build(const std::string& text) {
  TorchBuild b;
  b.blas = value_after(text, "BLAS_INFO=", ',');
  b.blas_version = bullet_line(text, {"Intel(R) oneAPI Math Kernel Library", "Intel(R) Math Kernel",
                                      "OpenBLAS", "BLIS", "Arm Performance Libraries"});
  const std::string dnn = bullet_line(text, {"Intel(R) MKL-DNN", "oneDNN", "Intel(R) oneDNN"});
  if (const auto v = dnn.find(" v"); v != std::string::npos)
    b.onednn_version = dnn.substr(v + 1, dnn.find(' ', v + 1) - v - 1);
  b.openmp = bullet_line(text, {"OpenMP"});
  b.cpu_capability = value_after(text, "CPU capability usage: ");
  b.compiler = bullet_line(text, {"GCC", "clang", "Clang", "MSVC"});
  const std::string cuda = value_after(text, "USE_CUDA=", ',');
  b.cuda = cuda == "ON" || cuda == "1";
  return b;
}

std::string summarize(const TorchBuild& b) {
  std::string blas = b.blas.empty() ? "no BLAS" : b.blas == "open" ? "OpenBLAS"
                                                : b.blas == "mkl"  ? "MKL"
                                                                   : b.blas;
  if (const auto v = b.blas_version.find("Version "); b.blas == "mkl" && v != std::string::npos)
    blas += " " + b.blas_version.substr(v + 8, b.blas_version.find_first_of("- ", v + 8) - v - 8);
  std::string out = blas;
  if (!b.onednn_version.empty()) out += ", oneDNN " + b.onednn_version;
  if (const auto aka = b.openmp.find("a.k.a. "); aka != std::string::npos)
    out += ", " + b.openmp.substr(aka + 7, b.openmp.find(')', aka) - aka - 7);
  else if (!b.openmp.empty())
    out += ", " + b.openmp;
  if (!b.cpu_capability.empty()) out += ", ATen " + b.cpu_capability;
  return out;
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
  if (!env.torch_build_config.empty() && env.torch_build.blas.empty())
    warnings.push_back("this LibTorch reports no BLAS (BLAS_INFO): fp32 matmul and Linear run on "
                       "its fallback kernels, many times slower than with MKL or OpenBLAS");
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
  env.cpu_isa = cpu_isa_flags();
  env.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  env.usable_cores = usable_cores();
  env.intra_op_threads = at::get_num_threads();
  env.inter_op_threads = at::get_num_interop_threads();
  env.torch_build = parse_torch_build(env.torch_build_config);
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
        "MALLOC_MMAP_MAX_", "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX", "LD_PRELOAD", "DNNL_MAX_CPU_ISA",
        "ONEDNN_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE", "ATEN_CPU_CAPABILITY",
        "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
        "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_CUDNN_V8_API_ENABLED"}) {
    if (const char* value = std::getenv(name)) env.variables[name] = value;
  }
  env.warnings = environment_warnings(env);
  return env;
}

}  // namespace torchperf
