// One side of a measurement: its process state is set once for the whole measurement, its
// blocks are timed and counted, and it finishes like any bench measurement.
#include "torchperf/bench/bench_side.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "torchperf/bench/bench_runner.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

BenchOptions mlp() {
  BenchOptions o;
  o.model = "builtin:mlp";
  o.time_s = 0.2;
  return o;
}

}  // namespace

TEST(BenchSideTest, ThreadsHoldThroughEveryBlockAndAreRestoredAfterTheMeasurement) {
  const int before = at::get_num_threads();
  const int wanted = before == 1 ? 2 : 1;
  SteadyTimeSource clock;
  BenchSide side(mlp(), Configuration::parse("threads=" + std::to_string(wanted)), clock);
  // Watch the process state at every block the sampler asks for, warm-up included.
  int blocks = 0, wrong = 0;
  TimedRun watched = side.run();
  watched.block = [&, inner = side.run().block](std::size_t n) {
    ++blocks;
    if (at::get_num_threads() != wanted) ++wrong;
    return inner(n);
  };
  Sampler sampler(clock, sampling_options(mlp()));
  const SampleSet samples = sampler.measure(watched);
  EXPECT_GT(blocks, 10);
  EXPECT_EQ(wrong, 0) << "a block ran without the measurement's thread count";
  EXPECT_EQ(at::get_num_threads(), before) << "restored after the measurement";
  const Measurement m = side.finish(samples, false);
  EXPECT_EQ(m.configuration.value("threads"), std::to_string(wanted));
  EXPECT_GE(m.page_faults_per_iteration, 0);
  EXPECT_EQ(m.process.at("allocator"), "glibc");
}

TEST(BenchSideTest, SteadyStatePageFaultsLeaveTheWarmUpOut) {
#if defined(__SANITIZE_ADDRESS__)
  // ASan quarantines freed blocks instead of handing them back, so every call touches new pages.
  GTEST_SKIP() << "AddressSanitizer's allocator never reuses a freed buffer at once";
#endif
  SteadyTimeSource clock;
  BenchSide side(mlp(), Configuration::parse("batch=64"), clock);
  SampleSet samples;
  side.run().enter();
  // The warm-up's first calls fault pages in; a measurement that counted them would say so.
  for (int i = 0; i < 3; ++i) side.run().block(1);
  for (int i = 0; i < 8; ++i) samples.iteration_ns.push_back(side.run().block(4).count() / 4.0);
  side.run().exit();
  samples.warmup.iterations = 3;
  samples.block_iterations = 4;
  samples.summary = summarize(samples.iteration_ns);
  const Measurement m = side.finish(samples, false);
  // An MLP at batch 64 reuses its buffers: glibc serves them again without new pages.
  EXPECT_LT(m.page_faults_per_iteration, 50) << m.page_faults_per_iteration;
}

TEST(BenchSideTest, InProcessComparisonsRefuseSidesThatDifferInProcessState) {
  BenchOptions o = mlp();
  o.config = Configuration::parse("threads=1");
  o.vs = Configuration::parse("threads=2");
  SteadyTimeSource clock;
  try {
    run_bench(o, clock);
    FAIL() << "two thread counts cannot share a process";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("differ in process state (threads=1 vs 2)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace torchperf
