// What the numbers were measured on: library versions and build, CPU and ISA, BLAS actually loaded,
// GPU, threads and the environment variables that change performance. Recorded in every result,
// with warnings for anything that undermines the numbers (reference BLAS, unoptimised build).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace torchperf {

enum class BlasKind { kReference, kOpenBlas, kMkl, kBlis, kOther, kNone };
std::string to_string(BlasKind kind);

struct BlasLibrary {
  BlasKind kind = BlasKind::kNone;
  std::string path;  // resolved path of the library the process actually loaded
};

// Classifies a loaded library's resolved path (pure, so it can be tested on any machine).
BlasKind classify_blas_path(const std::string& resolved_path);
// Finds the BLAS among the shared objects loaded into this process.
BlasLibrary detect_loaded_blas();

// Cores in this process's affinity mask (what a container or taskset leaves); 0 when unknown.
int usable_cores();

// The commit of the torchperf source that was built ("-dirty" with local changes), or "unknown".
std::string torchperf_git_commit();

struct Environment {
  std::string torchperf_version;
  std::string torchperf_git_commit;
  std::string torchperf_build_type;
  std::string torch_version;
  std::string torch_build_config;
  std::string cpu_model;
  std::vector<std::string> cpu_isa;  // the performance-relevant flags present (avx2, avx512f, amx…)
  int logical_cores = 0;
  int usable_cores = 0;      // in this process's affinity mask
  std::string cpu_governor;  // cpufreq scaling governor of cpu0, where the kernel exposes one
  double load_average_1m = 0;
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  BlasLibrary blas;
  bool cuda_available = false;
  int cuda_devices = 0;
  std::vector<std::string> gpu_names;
  std::string gpu_driver;
  long cudnn_version = 0;
  std::string hostname;
  std::string kernel;
  std::map<std::string, std::string> variables;  // OMP_NUM_THREADS, MALLOC_*, LD_PRELOAD … if set
  std::vector<std::string> warnings;
};

Environment capture_environment();

// Warnings that follow from an environment (separate so they can be tested on made-up ones).
std::vector<std::string> environment_warnings(const Environment& env);

}  // namespace torchperf
