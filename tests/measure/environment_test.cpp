#include "torchperf/measure/environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace torchperf {

TEST(EnvironmentTest, UsableCoresAreBetweenOneAndTheMachinesCores) {
  EXPECT_GE(usable_cores(), 1);
  EXPECT_LE(usable_cores(), static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(capture_environment().usable_cores, usable_cores());
}

// at::show_config() of PyPI's torch 2.13.0+cpu wheel (abridged: the lines the parser reads).
const char kWheelConfig[] = R"(PyTorch built with:
  - GCC 13.3
  - C++ Version: 202002
  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64 architecture applications
  - Intel(R) MKL-DNN v3.12.0 (Git Hash 80afa71049cd69a3df32adcccb623b12cd7baa22)
  - OpenMP 201511 (a.k.a. OpenMP 4.5)
  - LAPACK is enabled (usually provided by MKL)
  - CPU capability usage: AVX512
  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, LAPACK_INFO=mkl, TORCH_VERSION=2.13.0, USE_CUDA=0, USE_MKL=ON, USE_MKLDNN=ON, USE_OPENMP=ON,
)";

// Debian's 1.13 (OpenBLAS through libblas.so.3), and a CUDA build, abridged the same way.
const char kDebianConfig[] = R"(PyTorch built with:
  - GCC 12.2
  - C++ Version: 201703
  - Intel(R) MKL-DNN v2.7.3 (Git Hash N/A)
  - OpenMP 201511 (a.k.a. OpenMP 4.5)
  - CPU capability usage: AVX2
  - Build settings: BLAS_INFO=open, BUILD_TYPE=Release, USE_CUDA=OFF, USE_MKL=OFF,
)";

TEST(EnvironmentTest, ReadsBlasOneDnnOpenMpAndTheIsaFromTheWheelsBuildText) {
  const TorchBuild b = parse_torch_build(kWheelConfig);
  EXPECT_EQ(b.blas, "mkl");
  EXPECT_EQ(b.blas_version.rfind("Intel(R) oneAPI Math Kernel Library Version 2024.2", 0), 0u);
  EXPECT_EQ(b.onednn_version, "v3.12.0");
  EXPECT_EQ(b.openmp, "OpenMP 201511 (a.k.a. OpenMP 4.5)");
  EXPECT_EQ(b.cpu_capability, "AVX512");
  EXPECT_EQ(b.compiler, "GCC 13.3");
  EXPECT_FALSE(b.cuda);
  EXPECT_EQ(summarize(b), "MKL 2024.2, oneDNN v3.12.0, OpenMP 4.5, ATen AVX512");
}

TEST(EnvironmentTest, ReadsOtherBuildsTextsToo) {
  const TorchBuild b = parse_torch_build(kDebianConfig);
  EXPECT_EQ(b.blas, "open");
  EXPECT_EQ(b.onednn_version, "v2.7.3");
  EXPECT_EQ(b.cpu_capability, "AVX2");
  EXPECT_EQ(summarize(b), "OpenBLAS, oneDNN v2.7.3, OpenMP 4.5, ATen AVX2");
  EXPECT_TRUE(parse_torch_build("  - Build settings: BLAS_INFO=mkl, USE_CUDA=ON,\n").cuda);
  EXPECT_EQ(summarize(parse_torch_build("")), "no BLAS");
}

TEST(EnvironmentTest, TheRunningLibTorchNamesItsBlasAndOneDnn) {
  const Environment env = capture_environment();
  EXPECT_FALSE(env.torch_build.blas.empty()) << env.torch_build_config;
  EXPECT_FALSE(env.torch_build.onednn_version.empty()) << env.torch_build_config;
  EXPECT_FALSE(env.torch_build.cpu_capability.empty()) << env.torch_build_config;
}

TEST(EnvironmentTest, WarnsLoudlyWhenLibTorchHasNoBlas) {
  Environment env;
  env.torchperf_build_type = "Release";
  env.torch_build_config = "PyTorch built with:\n  - Build settings: BUILD_TYPE=Release,\n";
  env.torch_build = parse_torch_build(env.torch_build_config);
  const auto warnings = environment_warnings(env);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("reports no BLAS"), std::string::npos);
  env.torch_build_config = kWheelConfig;
  env.torch_build = parse_torch_build(env.torch_build_config);
  for (const auto& w : environment_warnings(env)) EXPECT_EQ(w.find("BLAS"), std::string::npos) << w;
}

TEST(EnvironmentTest, WarnsAboutAnUnoptimisedBuildAndOversubscription) {
  Environment env;
  env.torchperf_build_type = "Debug";
  env.usable_cores = 2;
  env.intra_op_threads = 8;
  const auto warnings = environment_warnings(env);
  bool build = false, threads = false;
  for (const auto& w : warnings) {
    build |= w.find("not optimised") != std::string::npos;
    threads |= w.find("oversubscription") != std::string::npos;
  }
  EXPECT_TRUE(build);
  EXPECT_TRUE(threads);
}

TEST(EnvironmentTest, WarnsAboutFrequencyScalingAndABusyMachine) {
  Environment env;
  env.torchperf_build_type = "Release";
  env.cpu_governor = "powersave";
  env.usable_cores = 2;
  env.load_average_1m = 3.5;
  const auto warnings = environment_warnings(env);
  ASSERT_GE(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("powersave"), std::string::npos);
  EXPECT_NE(warnings[1].find("busy"), std::string::npos);
  env.cpu_governor = "performance";
  env.load_average_1m = 0.5;
  for (const auto& w : environment_warnings(env)) {  // a sanitizer build adds its own warning
    EXPECT_EQ(w.find("governor"), std::string::npos) << w;
    EXPECT_EQ(w.find("busy"), std::string::npos) << w;
  }
}

TEST(EnvironmentTest, NamesTheCommitThatWasBuilt) {
  const std::string commit = torchperf_git_commit();
  EXPECT_FALSE(commit.empty());
}

TEST(EnvironmentTest, CaptureDescribesThisMachine) {
  const Environment env = capture_environment();
  EXPECT_FALSE(env.torch_version.empty());
  EXPECT_GT(env.logical_cores, 0);
  EXPECT_GT(env.usable_cores, 0);
  EXPECT_GT(env.intra_op_threads, 0);
  EXPECT_NE(env.torch_build_config.find("BLAS"), std::string::npos);
  EXPECT_EQ(env.torchperf_version, TORCHPERF_VERSION);
}

TEST(EnvironmentTest, RecordsEveryVariableAllocatorGlibcTunedSets) {
  // A glibc-tuned point's record names all four variables, MALLOC_MMAP_MAX_ among them: it is
  // what stops an activation above 32 MiB being faulted in afresh each call (stop 72).
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_",
                           "MALLOC_TOP_PAD_"})
    ASSERT_EQ(setenv(name, "7", 1), 0);
  const Environment env = capture_environment();
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_",
                           "MALLOC_TOP_PAD_"}) {
    ASSERT_TRUE(env.variables.count(name)) << name;
    EXPECT_EQ(env.variables.at(name), "7");
    unsetenv(name);
  }
}

TEST(EnvironmentTest, TheCpuVendorIsCpuinfosVendorId) {
  std::ifstream info("/proc/cpuinfo");
  std::string expected;
  for (std::string line; std::getline(info, line) && expected.empty();)
    if (line.rfind("vendor_id", 0) == 0) expected = line.substr(line.find(':') + 2);
  EXPECT_EQ(cpu_vendor(), expected);
}

}  // namespace torchperf
