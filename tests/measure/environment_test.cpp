#include "torchperf/measure/environment.h"

#include <gtest/gtest.h>

#include <thread>

namespace torchperf {

TEST(EnvironmentTest, UsableCoresAreBetweenOneAndTheMachinesCores) {
  EXPECT_GE(usable_cores(), 1);
  EXPECT_LE(usable_cores(), static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(capture_environment().usable_cores, usable_cores());
}

TEST(EnvironmentTest, ClassifiesDebianBlasAlternatives) {
  EXPECT_EQ(classify_blas_path("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"),
            BlasKind::kReference);
  EXPECT_EQ(classify_blas_path("/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"),
            BlasKind::kOpenBlas);
  EXPECT_EQ(classify_blas_path("/opt/intel/mkl/lib/libmkl_rt.so.2"), BlasKind::kMkl);
  EXPECT_EQ(classify_blas_path("/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3"),
            BlasKind::kBlis);
  EXPECT_EQ(classify_blas_path("/usr/lib/x86_64-linux-gnu/libc.so.6"), BlasKind::kNone);
}

TEST(EnvironmentTest, FindsTheBlasThatLibTorchLoaded) {
  const BlasLibrary blas = detect_loaded_blas();
  EXPECT_NE(blas.kind, BlasKind::kNone);
  EXPECT_FALSE(blas.path.empty());
}

TEST(EnvironmentTest, WarnsLoudlyAboutTheReferenceBlas) {
  Environment env;
  env.torchperf_build_type = "Release";
  env.blas = {BlasKind::kReference, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"};
  const auto warnings = environment_warnings(env);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("reference (netlib)"), std::string::npos);
  EXPECT_NE(warnings.front().find("install-deps"), std::string::npos);
}

TEST(EnvironmentTest, WarnsAboutAnUnoptimisedBuildAndOversubscription) {
  Environment env;
  env.torchperf_build_type = "Debug";
  env.blas.kind = BlasKind::kOpenBlas;
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
  env.blas.kind = BlasKind::kOpenBlas;
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

}  // namespace torchperf
