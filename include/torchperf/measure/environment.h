// What the numbers were measured on: library versions and build (BLAS, oneDNN, OpenMP, the ISA in
// use, as LibTorch reports them), CPU, GPU, threads and the environment variables that change
// performance. Recorded in every result, with warnings for anything that undermines the numbers.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace torchperf {

// LibTorch's build as it describes itself (at::show_config), the parts that decide its speed.
struct TorchBuild {
  std::string blas;            // BLAS_INFO: "mkl", "open" (OpenBLAS), "blis", ... ("" if none)
  std::string blas_version;    // e.g. "Intel(R) oneAPI Math Kernel Library Version 2024.2-Product ..."
  std::string onednn_version;  // e.g. "v3.12.0" (oneDNN, once MKL-DNN)
  std::string openmp;          // e.g. "OpenMP 201511 (a.k.a. OpenMP 4.5)"
  std::string cpu_capability;  // the ATen kernels in use now: "DEFAULT", "AVX2", "AVX512", ...
  std::string compiler;        // e.g. "GCC 13.3"
  bool cuda = false;           // USE_CUDA
};

// Parses at::show_config()'s text (pure, so it is tested on the texts of several builds).
TorchBuild parse_torch_build(const std::string& show_config);
// "MKL 2024.2, oneDNN v3.12.0, OpenMP 4.5, AVX512": one line for tables and reports.
std::string summarize(const TorchBuild& build);

// The performance-relevant flags this CPU has (/proc/cpuinfo's names: avx2, avx512f, amx_tile...).
std::vector<std::string> cpu_isa_flags();

// /proc/cpuinfo's vendor_id ("GenuineIntel", "AuthenticAMD"), or "" when it names none.
std::string cpu_vendor();

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
  TorchBuild torch_build;
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
