// The Python runtime driven from here: a real Python worker, a real model, this process's sampler,
// and the output judged against the fp32 reference.
#include "torchperf/worker/python_worker.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <fstream>

#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

// An environment variable set for one test, as it was afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class PythonWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-py-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  WorkerRun run() const {
    WorkerRun r;
    r.executable = TORCHPERF_TEST_CLI;
    r.log_dir = dir_.string();
    r.limits.time_limit_s = 300;
    return r;
  }
  static BenchOptions options(const std::string& model, const std::string& config) {
    BenchOptions o;
    o.model = model;
    o.time_s = 0.3;
    o.target_relative_ci = 0.5;
    o.config = Configuration::parse(config);
    return o;
  }
  std::filesystem::path dir_;
};

}  // namespace

TEST_F(PythonWorkerTest, AProgramRunsInPythonTimedHereAndItsOutputsMatchTheReference) {
  SteadyTimeSource clock;
  const BenchResult r = measure_python_in_worker(
      options(testing::fixture("mlp_dynamic.pt2"), "runtime=python,batch=4,threads=1"), run(),
      clock);
  ASSERT_TRUE(r.measurement);
  const Measurement& m = *r.measurement;
  EXPECT_EQ(m.batch, 4);
  EXPECT_GT(m.throughput_samples_per_s, 0);
  EXPECT_GT(m.samples.summary.count, 0u);
  EXPECT_NEAR(m.quality.cosine, 1.0, 1e-5);
  EXPECT_TRUE(m.valid) << m.invalid_reason;
  EXPECT_EQ(m.configuration.value("graph"), "eager");
  EXPECT_EQ(m.compile_s, -1) << "eager compiles nothing";
  EXPECT_EQ(m.process.at("runtime"), "python");
  EXPECT_EQ(m.process.at("threads"), "1");
  EXPECT_GT(m.peak_memory_bytes, 0);
}

TEST_F(PythonWorkerTest, AStreamsPaddingIsCheckedInPythonUnlessTheRunIsToldToSkipIt) {
  SteadyTimeSource clock;
  BenchOptions o = options("builtin:encoder", "runtime=python,batch=4,grad=inference");
  o.input_spec = "int64:S@0..1000;int64:S@1..2";
  o.dims = {"S=4..64"};
  const BenchResult checked = measure_python_in_worker(o, run(), clock);
  ASSERT_TRUE(checked.measurement && checked.measurement->stream);
  EXPECT_EQ(checked.measurement->stream->padding_check_lengths.size(), 3u);
  o.check_padding = false;
  const BenchResult skipped = measure_python_in_worker(o, run(), clock);
  ASSERT_TRUE(skipped.measurement && skipped.measurement->stream);
  EXPECT_TRUE(skipped.measurement->stream->padding_check_lengths.empty());
}

TEST_F(PythonWorkerTest, ABuiltInRunsInPythonAsTheTorchScriptItIs) {
  SteadyTimeSource clock;
  const BenchResult r = measure_python_in_worker(
      options("builtin:mlp", "runtime=python,batch=2,grad=inference"), run(), clock);
  ASSERT_TRUE(r.measurement);
  EXPECT_NEAR(r.measurement->quality.cosine, 1.0, 1e-5);
  EXPECT_EQ(r.measurement->configuration.value("grad"), "inference");
}

TEST_F(PythonWorkerTest, TheTwoRuntimesAreComparedEachInItsOwnWorker) {
  BenchOptions o = options("builtin:mlp", "runtime=python,threads=1");
  o.vs = Configuration::parse("threads=1");
  SteadyTimeSource clock;
  const BenchResult r = compare_in_workers(o, run(), clock);
  ASSERT_TRUE(r.comparison);
  EXPECT_EQ(r.comparison->a.process.at("runtime"), "python");
  EXPECT_EQ(r.comparison->b.configuration.value("runtime"), "cpp");
  EXPECT_TRUE(r.comparison->separate_processes);
  EXPECT_NEAR(r.comparison->a.quality.cosine, 1.0, 1e-5);
  EXPECT_GT(r.comparison->speedup.ratio, 0);
}

TEST_F(PythonWorkerTest, ATunesPairOfOneProcessStateRunsBothPythonSidesInOneWorker) {
  // A tune's head-to-head (its sides drawn from the points' pool) of two Python sides with the
  // same threads and environment: one worker holds both; bench --vs keeps a worker per side.
  BenchOptions o = options("builtin:mlp", "runtime=python,threads=1,grad=inference");
  o.vs = Configuration::parse("runtime=python,threads=1,grad=no_grad");
  SteadyTimeSource clock;
  PythonWorkerPool pool;
  WorkerRun pooled = run();
  pooled.python_pool = &pool;
  const BenchResult shared = compare_in_workers(o, pooled, clock);
  ASSERT_TRUE(shared.comparison);
  EXPECT_EQ(pool.started(), 1u);
  EXPECT_FALSE(shared.comparison->separate_processes);
  EXPECT_EQ(shared.comparison->b.configuration.value("grad"), "no_grad");
  EXPECT_NEAR(shared.comparison->a.quality.cosine, 1.0, 1e-5);
  EXPECT_NEAR(shared.comparison->b.quality.cosine, 1.0, 1e-5);
  EXPECT_GT(shared.comparison->speedup.ratio, 0);

  o.vs = Configuration::parse("runtime=python,threads=2,grad=no_grad");
  const BenchResult apart = compare_in_workers(o, pooled, clock);
  ASSERT_TRUE(apart.comparison);
  EXPECT_EQ(pool.started(), 2u) << "a takes the pool's threads=1 worker back; threads=2 is "
                                   "another process state: a worker of its own";
  EXPECT_TRUE(apart.comparison->separate_processes);

  o.vs = Configuration::parse("runtime=python,threads=1,grad=no_grad");
  const BenchResult bench = compare_in_workers(o, run(), clock);
  ASSERT_TRUE(bench.comparison);
  EXPECT_TRUE(bench.comparison->separate_processes) << "bench --vs: a worker per side";
}

TEST_F(PythonWorkerTest, ACompileThatHangsIsStoppedAtTheTimeLimitWithWhatItsCompilerStarted) {
  // A real torch.compile whose C++ compiler never returns (Inductor runs $CXX), in a fresh
  // Inductor cache so that nothing is found compiled.
  const std::filesystem::path compiler = dir_ / "hanging-c++";
  const std::filesystem::path marker = dir_ / "compiler-started";
  std::ofstream(compiler) << "#!/bin/sh\ntouch " << marker.string() << "\nexec sleep 600\n";
  std::filesystem::permissions(compiler, std::filesystem::perms::owner_all);
  ScopedEnv cxx("CXX", compiler.string());
  ScopedEnv cache("TORCHINDUCTOR_CACHE_DIR", (dir_ / "inductor").string());
  WorkerRun limited = run();
  limited.limits.time_limit_s = 25;
  SteadyTimeSource clock;
  const auto started = std::chrono::steady_clock::now();
  try {
    measure_python_in_worker(
        options(testing::fixture("mlp_dynamic.pt2"), "runtime=python,graph=compile,batch=4"),
        limited, clock);
    FAIL() << "a compile that hangs ends in an error";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("still running after its 25 s limit"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  EXPECT_TRUE(std::filesystem::exists(marker)) << "the compile reached the compiler";
  // The compiler went with the worker: no `sleep 600` is left behind once the kill has landed
  // (on a loaded machine the group's last process may take a moment to go).
  const std::string left = testing::run_shell(
      "for i in 1 2 3 4 5 6 7 8 9 10; do pgrep -f '^sleep 600$' > /dev/null || exit 0; sleep 1; "
      "done; pgrep -f '^sleep 600$'").out;
  EXPECT_EQ(left, "") << "the hanging compiler outlived the worker";
}

TEST_F(PythonWorkerTest, APythonWorkerOverTheMemoryCapIsKilledAndSaysSo) {
  WorkerRun capped = run();
  capped.limits.memory_cap_bytes = 64ll << 20;  // below what importing torch alone takes
  SteadyTimeSource clock;
  try {
    measure_python_in_worker(
        options(testing::fixture("mlp_dynamic.pt2"), "runtime=python,batch=4"), capped, clock);
    FAIL() << "a worker over its memory cap ends in an error";
  } catch (const ResourceLimit& e) {  // out of memory keeps its kind (exit 9)
    EXPECT_NE(std::string(e.what()).find("exceeded the memory cap of 64 MiB"), std::string::npos)
        << e.what();
  }
}

TEST_F(PythonWorkerTest, AnAllocatorIsPreloadedIntoThePythonWorkerAndConfirmedFromItsMaps) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer replaces malloc itself: the allocator knob does not apply";
#endif
  SteadyTimeSource clock;
  const BenchResult r = measure_python_in_worker(
      options(testing::fixture("mlp_dynamic.pt2"), "runtime=python,batch=4,allocator=jemalloc"),
      run(), clock);
  ASSERT_TRUE(r.measurement);
  EXPECT_NE(r.measurement->process.at("allocator").find("libjemalloc.so"), std::string::npos)
      << r.measurement->process.at("allocator");
  const BenchResult plain = measure_python_in_worker(
      options(testing::fixture("mlp_dynamic.pt2"), "runtime=python,batch=4"), run(), clock);
  EXPECT_EQ(plain.measurement->process.at("allocator"), "glibc");
}

TEST_F(PythonWorkerTest, ACppConfigurationIsNotMeasuredByThePythonWorker) {
  SteadyTimeSource clock;
  EXPECT_THROW(measure_python_in_worker(options("builtin:mlp", "threads=1"), run(), clock),
               UsageError);
}

}  // namespace torchperf

namespace torchperf {

TEST(PythonWorkerPoolTest, KeepsOneIdleWorkerOfAProcessStateAndNeverAnEndedOne) {
  // A stand-in that waits on its pipe as an idle Python worker does.
  const auto idle = [] {
    return std::make_unique<WorkerSession>(
        TORCHPERF_TEST_PYTHON, WorkerEnvironment{}, WatchLimits{}, "/dev/null", nullptr,
        std::vector<std::string>{"-c", "import sys; sys.stdin.read()"});
  };
  PythonWorkerPool pool;
  EXPECT_EQ(pool.take("threads=2"), nullptr);
  auto first = idle();
  auto second = idle();
  const pid_t a = first->pid();
  pool.give_back("threads=2", std::move(first));
  pool.give_back("threads=2", std::move(second));  // a second idle one of that state ends
  EXPECT_EQ(pool.take("threads=1"), nullptr) << "another process state";
  auto w = pool.take("threads=2");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->pid(), a);
  EXPECT_EQ(pool.take("threads=2"), nullptr) << "the second was not kept";
  ::kill(w->pid(), SIGKILL);  // killed while idle: never handed out again
  siginfo_t ended{};
  ::waitid(P_PID, static_cast<id_t>(w->pid()), &ended, WEXITED | WNOWAIT);  // left to reap
  pool.give_back("threads=2", std::move(w));
  EXPECT_EQ(pool.take("threads=2"), nullptr);
}

}  // namespace torchperf
