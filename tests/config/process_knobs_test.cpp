// The worker knobs as declared: what a fresh worker's environment gets for each value, what is
// "not applicable" when its package is missing, and what a process confirms about itself.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/config/apply.h"
#include "torchperf/config/configuration.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/measure/environment.h"

namespace torchperf {
namespace {

// Points the knobs at an empty library folder for one test: nothing is installed there.
class EmptyLibraryDir {
 public:
  EmptyLibraryDir()
      : dir_(std::filesystem::temp_directory_path() /
             ("torchperf-libdir-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    ::setenv("TORCHPERF_LIBDIR", dir_.c_str(), 1);
  }
  ~EmptyLibraryDir() {
    ::unsetenv("TORCHPERF_LIBDIR");
    std::filesystem::remove_all(dir_);
  }

 private:
  std::filesystem::path dir_;
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ProcessKnobsTest, APreloadedAllocatorIsUsableExactlyWhenThisIsNotAnAsanBuild) {
  const Applicability a = find_knob("allocator").applies(WorkloadTraits{}, "tcmalloc");
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_FALSE(a.applies);
  EXPECT_NE(a.reason.find("AddressSanitizer"), std::string::npos) << a.reason;
#else
  EXPECT_TRUE(a.applies) << a.reason;  // scripts/install-deps.sh installs it
#endif
  EXPECT_TRUE(find_knob("allocator").applies(WorkloadTraits{}, "glibc-tuned").applies);
}

TEST(ProcessKnobsTest, WorkerKnobsAreDeclaredAsSuchAndSweptOnlyWhenAskedFor) {
  for (const char* name : {"allocator", "omp_wait", "omp_bind", "aten_isa", "onednn_isa", "mkl_isa",
                           "interop_threads"}) {
    const Knob& k = find_knob(name);
    EXPECT_EQ(k.scope, KnobScope::kWorker) << name;
    EXPECT_FALSE(k.swept_by_default(WorkloadTraits{})) << name;
    EXPECT_FALSE(k.listed_at_baseline) << name;
    EXPECT_TRUE(k.inference) << name;
    EXPECT_FALSE(k.training) << name;
  }
  EXPECT_EQ(to_string(KnobScope::kWorker), "worker");
}

TEST(ProcessKnobsTest, AnAllocatorIsPreloadedAndGlibcTuningSetsItsThresholds) {
  const Knob& k = find_knob("allocator");
  const auto jemalloc = k.environment("jemalloc");
  ASSERT_TRUE(jemalloc.count("LD_PRELOAD"));
  EXPECT_NE(jemalloc.at("LD_PRELOAD").find("libjemalloc.so.2"), std::string::npos);
  const auto tuned = k.environment("glibc-tuned");
  EXPECT_EQ(tuned.at("MALLOC_MMAP_THRESHOLD_"), "33554432");
  EXPECT_EQ(tuned.at("MALLOC_TRIM_THRESHOLD_"), "1073741824");
  // Activations above the 32 MiB ceiling come from the heap too, not a fresh mapping each call.
  EXPECT_EQ(tuned.at("MALLOC_MMAP_MAX_"), "0");
  EXPECT_TRUE(k.environment("glibc").empty());
  EXPECT_EQ(k.code("tcmalloc", false).environment.size(), 1u);
}

TEST(ProcessKnobsTest, TheBlasKnobOfDebiansLibblasIsGoneWithIt) {
  // LibTorch from PyPI links MKL into libtorch_cpu: there is no libblas.so.3 to swap.
  for (const auto& k : knob_registry()) EXPECT_NE(k.name, "blas");
  const std::string error = message_of([] { Configuration::parse("blas=openblas-openmp"); });
  EXPECT_NE(error.find("knob 'blas' is no longer available: "), std::string::npos) << error;
  EXPECT_NE(error.find("MKL"), std::string::npos) << error;
}

TEST(ProcessKnobsTest, IsaKnobsSetTheVariableTheirLibraryReadsAtStartUp) {
  EXPECT_EQ(find_knob("aten_isa").environment("avx2").at("ATEN_CPU_CAPABILITY"), "avx2");
  EXPECT_EQ(find_knob("aten_isa").environment("none").at("ATEN_CPU_CAPABILITY"), "default");
  EXPECT_EQ(find_knob("onednn_isa").environment("avx2").at("ONEDNN_MAX_CPU_ISA"), "AVX2");
  EXPECT_EQ(find_knob("onednn_isa").environment("avx512").at("ONEDNN_MAX_CPU_ISA"), "AVX512_CORE");
  EXPECT_EQ(find_knob("mkl_isa").environment("avx512").at("MKL_ENABLE_INSTRUCTIONS"), "AVX512");
  for (const char* name : {"aten_isa", "onednn_isa", "mkl_isa"}) {
    EXPECT_TRUE(find_knob(name).environment("default").empty()) << name;
    EXPECT_EQ(find_knob(name).baseline(WorkloadTraits{}), "default") << name;
  }
}

TEST(ProcessKnobsTest, AnIsaThisCpuLacksIsNotApplicableAndSaysWhichFlagIsMissing) {
  const std::vector<std::string> have = cpu_isa_flags();
  const bool avx512 = std::find(have.begin(), have.end(), "avx512bw") != have.end();
  const Applicability a = find_knob("onednn_isa").applies(WorkloadTraits{}, "avx512");
  EXPECT_EQ(a.applies, avx512) << a.reason;
  if (!avx512) {
    EXPECT_NE(a.reason.find("this CPU has no avx512"), std::string::npos) << a.reason;
  }
  EXPECT_TRUE(find_knob("aten_isa").applies(WorkloadTraits{}, "none").applies);
}

TEST(ProcessKnobsTest, MklIsaAppliesOnIntelCpusOnlyAndSaysWhyElsewhere) {
  const Applicability a = find_knob("mkl_isa").applies(WorkloadTraits{}, "avx2");
  const std::vector<std::string> have = cpu_isa_flags();
  const bool avx2 = std::find(have.begin(), have.end(), "avx2") != have.end();
  if (cpu_vendor() == "GenuineIntel") {
    EXPECT_EQ(a.applies, avx2) << a.reason;
  } else {
    EXPECT_FALSE(a.applies);
    EXPECT_NE(a.reason.find("whatever MKL_ENABLE_INSTRUCTIONS says"), std::string::npos) << a.reason;
  }
  EXPECT_TRUE(find_knob("mkl_isa").applies(WorkloadTraits{}, "default").applies);
}

TEST(ProcessKnobsTest, ATenIsaIsConfirmedByTheKernelsLibTorchUsesNotByTheVariable) {
  // This process runs with ATen's own choice: "default" names it; a cap it was not given is
  // refused even when the variable says so (ATen reads it once, at start-up).
  const std::string in_use = parse_torch_build(compat::torch_build_config()).cpu_capability;
  EXPECT_NE(find_knob("aten_isa").confirm("default").find("ATen " + in_use), std::string::npos);
  if (in_use != "DEFAULT") {
    ::setenv("ATEN_CPU_CAPABILITY", "default", 1);
    const std::string error = message_of([] { find_knob("aten_isa").confirm("none"); });
    ::unsetenv("ATEN_CPU_CAPABILITY");
    EXPECT_NE(error.find("aten_isa=none: LibTorch uses " + in_use + " kernels, not DEFAULT"),
              std::string::npos)
        << error;
  }
}

TEST(ProcessKnobsTest, OpenMpKnobsSetTheirVariablesAndDefaultLeavesThemAlone) {
  EXPECT_EQ(find_knob("omp_wait").environment("passive").at("OMP_WAIT_POLICY"), "PASSIVE");
  const auto spread = find_knob("omp_bind").environment("spread");
  EXPECT_EQ(spread.at("OMP_PROC_BIND"), "spread");
  EXPECT_EQ(spread.at("OMP_PLACES"), "cores");
  EXPECT_TRUE(find_knob("omp_bind").environment("default").empty());
}

TEST(ProcessKnobsTest, AValueWhosePackageIsMissingIsNotApplicableAndNamesThePackage) {
  const EmptyLibraryDir empty;
  const Applicability a = find_knob("allocator").applies(WorkloadTraits{}, "jemalloc");
  EXPECT_FALSE(a.applies);
  EXPECT_NE(a.reason.find("libjemalloc2"), std::string::npos) << a.reason;
  const std::string error = message_of(
      [] { resolve(Configuration::parse("allocator=tcmalloc"), WorkloadTraits{}); });
  EXPECT_NE(error.find("libtcmalloc-minimal4"), std::string::npos) << error;
  EXPECT_TRUE(find_knob("allocator").applies(WorkloadTraits{}, "glibc-tuned").applies);
}

TEST(ProcessKnobsTest, AnUnknownValueListsTheValuesInstalledHere) {
  const std::string installed = message_of([] { Configuration::parse("allocator=hoard"); });
  EXPECT_NE(installed.find("no value 'hoard'"), std::string::npos) << installed;
  EXPECT_NE(installed.find("(installed here)"), std::string::npos) << installed;
  if (find_knob("allocator").applies(WorkloadTraits{}, "jemalloc").applies) {
    EXPECT_NE(installed.find("glibc, glibc-tuned, jemalloc"), std::string::npos) << installed;
  }
  const EmptyLibraryDir empty;
  const std::string missing = message_of([] { Configuration::parse("allocator=hoard"); });
  EXPECT_NE(missing.find("expected one of glibc, glibc-tuned (installed here); not installed "
                         "here: jemalloc, tcmalloc, mimalloc"),
            std::string::npos)
      << missing;
}

TEST(ProcessKnobsTest, AConfigurationNamesAWorkerKnobOnlyWhenItWasAskedFor) {
  WorkloadTraits t;
  t.default_interop_threads = 2;
  EXPECT_EQ(resolve(Configuration::parse("threads=1"), t).to_string().find("allocator"),
            std::string::npos);
  // Asked for, even at its baseline: a sweep over the allocator names every point's value.
  EXPECT_NE(resolve(Configuration::parse("allocator=glibc,threads=1"), t).to_string().find(
                "allocator=glibc"),
            std::string::npos);
  EXPECT_NE(resolve(Configuration::parse("interop_threads=2"), t).to_string().find(
                "interop_threads=2"),
            std::string::npos);
  const ResolvedConfiguration r = resolve(Configuration::parse("allocator=glibc"), t);
  EXPECT_TRUE(r.knob("allocator").baseline);
  EXPECT_FALSE(r.knob("mkl_isa").requested);
}

TEST(ProcessKnobsTest, ThisProcessConfirmsGlibcAndRefusesAnAllocatorItDidNotLoad) {
  // The test binary runs without LD_PRELOAD: glibc is what it has.
  EXPECT_EQ(find_knob("allocator").confirm("glibc"), "glibc");
  const std::string error = message_of([] { find_knob("allocator").confirm("mimalloc"); });
  EXPECT_NE(error.find("allocator=mimalloc: libmimalloc.so.2 is not loaded"), std::string::npos)
      << error;
  const std::string tuned = message_of([] { find_knob("allocator").confirm("glibc-tuned"); });
  EXPECT_NE(tuned.find("MALLOC_MMAP_MAX_=(unset), expected 0"), std::string::npos)
      << tuned;
}

TEST(ProcessKnobsTest, OpenMpConfirmationReadsTheEnvironmentTheProcessSees) {
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  EXPECT_EQ(find_knob("omp_wait").confirm("passive"), "passive (OMP_WAIT_POLICY=PASSIVE)");
  const std::string error = message_of([] { find_knob("omp_wait").confirm("active"); });
  EXPECT_NE(error.find("sees OMP_WAIT_POLICY=PASSIVE, expected ACTIVE"), std::string::npos)
      << error;
  ::unsetenv("OMP_WAIT_POLICY");
}

TEST(ProcessKnobsTest, InteropThreadsAreSetOnceBeforeInterOpWorkAndThenFixed) {
  const int first = static_cast<int>(at::get_num_interop_threads());
  const std::string other = std::to_string(first == 1 ? 2 : 1);
  // Whether this process already started its inter-op pool depends on earlier tests in it: either
  // the value takes, or the refusal says why.
  try {
    EXPECT_EQ(find_knob("interop_threads").confirm(other), other);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("inter-op work had already started"), std::string::npos);
  }
  at::launch([] {});  // inter-op work: the pool is fixed from here on
  const std::string now = std::to_string(at::get_num_interop_threads());
  EXPECT_EQ(find_knob("interop_threads").confirm(now), now);
  const std::string changed = std::to_string(at::get_num_interop_threads() + 1);
  EXPECT_THROW(find_knob("interop_threads").confirm(changed), ConfigError);
}

TEST(ProcessKnobsTest, SidesDifferInProcessStateByTheKnobsEachNames) {
  EXPECT_TRUE(process_state_differences(Configuration::parse("grad=no_grad"), Configuration())
                  .empty());
  const auto d = process_state_differences(Configuration::parse("threads=1"),
                                           Configuration::parse("threads=2,grad=no_grad"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "threads=1 vs 2");
  EXPECT_EQ(process_state_differences(Configuration::parse("allocator=jemalloc"), Configuration())
                .at(0),
            "allocator=jemalloc vs (baseline)");
  EXPECT_EQ(worker_knobs_named(Configuration::parse("threads=2,allocator=tcmalloc")),
            std::vector<std::string>{"allocator=tcmalloc"});
  const auto env = worker_environment(Configuration::parse("omp_wait=active,allocator=glibc-tuned"));
  EXPECT_EQ(env.at("OMP_WAIT_POLICY"), "ACTIVE");
  EXPECT_EQ(env.at("MALLOC_TRIM_THRESHOLD_"), "1073741824");
}

}  // namespace torchperf
