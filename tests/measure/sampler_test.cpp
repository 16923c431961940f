#include "torchperf/measure/sampler.h"

#include <gtest/gtest.h>

#include <deque>
#include <optional>
#include <stdexcept>
#include <vector>

namespace torchperf {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// A workload whose iterations take scripted times on a manual clock: no sleeping.
struct ScriptedRun {
  ManualTimeSource& clock;
  std::deque<Nanoseconds> script;  // consumed first
  Nanoseconds steady;              // then every iteration takes this long
  int calls = 0;

  TimedRun timed() {
    TimedRun run;
    run.iterate = [this] {
      ++calls;
      Nanoseconds t = steady;
      if (!script.empty()) {
        t = script.front();
        script.pop_front();
      }
      clock.advance(t);
    };
    return run;
  }
};

SamplingOptions quick() {
  SamplingOptions o;
  o.time_budget = milliseconds(500);
  o.warmup_budget = milliseconds(500);
  return o;
}

}  // namespace

TEST(SamplerTest, StopsAsSoonAsTheIntervalIsTightOnASteadyWorkload) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {}, milliseconds(2)};
  Sampler sampler(clock, quick());
  const SampleSet set = sampler.measure(work.timed());
  EXPECT_EQ(set.stop, StopReason::kConfidenceReached);
  EXPECT_EQ(set.summary.count, 10u);  // min_samples
  EXPECT_DOUBLE_EQ(set.summary.median, 2e6);
  EXPECT_EQ(set.block_iterations, 1u);
}

TEST(SamplerTest, OnAnAsynchronousDeviceABlockRunsManyCallsSoItsEndingWaitIsNegligible) {
  // A 1.06 ms call on a GPU: one-call blocks each pay the device's idle gap between blocks.
  ManualTimeSource clock;
  ScriptedRun work{clock, {}, microseconds(1060)};
  SamplingOptions o = quick();
  o.min_block_time = kAsynchronousDeviceMinBlockTime;
  const SampleSet set = Sampler(clock, o).measure(work.timed());
  EXPECT_EQ(set.block_iterations, 24u) << "25 ms of 1.06 ms calls";
  EXPECT_EQ(Sampler(clock, quick()).measure(ScriptedRun{clock, {}, microseconds(1060)}.timed())
                .block_iterations,
            1u)
      << "on a CPU a 1 ms block dwarfs the clock's resolution";
}

TEST(SamplerTest, SpendsTheWholeBudgetWhenTheWorkloadIsTooNoisy) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {}, milliseconds(1)};
  TimedRun run = work.timed();
  bool slow = false;
  run.iterate = [&] {
    clock.advance(slow ? milliseconds(3) : milliseconds(1));
    slow = !slow;
  };
  SamplingOptions o = quick();
  o.min_block_time = microseconds(1);
  Sampler sampler(clock, o);
  const SampleSet set = sampler.measure(run);
  EXPECT_EQ(set.stop, StopReason::kTimeBudgetSpent);
  EXPECT_GE(set.measured, milliseconds(500));
  EXPECT_GT(set.summary.median_ci_relative, 0.01);
}

TEST(SamplerTest, WarmUpReportsTheColdFirstCallAndSettles) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {milliseconds(100), milliseconds(20), milliseconds(9)}, milliseconds(5)};
  Sampler sampler(clock, quick());
  const Warmup w = sampler.warm_up(work.timed());
  EXPECT_EQ(w.first_call, milliseconds(100));
  EXPECT_TRUE(w.settled);
  EXPECT_DOUBLE_EQ(w.settled_iteration_ns, 5e6);
  EXPECT_GE(w.iterations, 7u);  // first call + two windows of three
}

TEST(SamplerTest, WarmUpThatNeverSettlesStopsAtItsBudgetAndSaysSo) {
  ManualTimeSource clock;
  Nanoseconds t = milliseconds(1);
  TimedRun run;
  run.iterate = [&] {
    clock.advance(t);
    t = t * 3 / 2;  // keeps getting slower
  };
  Sampler sampler(clock, quick());
  const Warmup w = sampler.warm_up(run);
  EXPECT_FALSE(w.settled);
  EXPECT_GE(w.total, milliseconds(500));
}

TEST(SamplerTest, ShortIterationsAreTimedInBlocksThatDwarfTheClock) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {}, microseconds(10)};
  Sampler sampler(clock, quick());
  const SampleSet set = sampler.measure(work.timed());
  EXPECT_EQ(set.block_iterations, 100u);  // 1 ms / 10 us
  EXPECT_DOUBLE_EQ(set.summary.median, 10e3);
}

TEST(SamplerTest, EntersProcessStateOnceBeforeWarmUpAndNeverBetweenBlocks) {
  ManualTimeSource clock;
  int entered = 0, exited = 0, iterations_outside = 0;
  bool inside = false;
  TimedRun run;
  run.iterate = [&] {
    if (!inside) ++iterations_outside;
    clock.advance(milliseconds(2));
  };
  run.enter = [&] {
    ++entered;
    inside = true;
    clock.advance(milliseconds(50));  // an expensive switch: must be neither timed nor repeated
  };
  run.exit = [&] {
    ++exited;
    inside = false;
    clock.advance(milliseconds(50));
  };
  Sampler sampler(clock, quick());
  const SampleSet set = sampler.measure(run);
  EXPECT_EQ(entered, 1);
  EXPECT_EQ(exited, 1);
  EXPECT_EQ(iterations_outside, 0);
  EXPECT_DOUBLE_EQ(set.summary.median, 2e6);
  EXPECT_DOUBLE_EQ(set.summary.max, 2e6);
  EXPECT_DOUBLE_EQ(set.warmup.settled_iteration_ns, 2e6);
}

TEST(SamplerTest, PairedRunReportsTheSpeedupOfAOverB) {
  ManualTimeSource clock;
  ScriptedRun a{clock, {}, milliseconds(2)};
  ScriptedRun b{clock, {}, milliseconds(3)};
  Sampler sampler(clock, quick());
  const PairedSampleSet set = sampler.measure_paired(a.timed(), b.timed());
  EXPECT_EQ(set.stop, StopReason::kConfidenceReached);
  EXPECT_DOUBLE_EQ(set.speedup_estimate.ratio, 1.5);
  EXPECT_DOUBLE_EQ(set.speedup_estimate.interval.low, 1.5);
  EXPECT_EQ(set.speedup_estimate.rounds, 10u);  // min_samples rounds before it may stop
  EXPECT_EQ(set.a.summary.count, set.b.summary.count);
  EXPECT_EQ(set.a.block_iterations, set.b.block_iterations);
}

TEST(SamplerTest, PairedRunNeedsItsMinimumRoundsEvenWhenTheFirstOnesAgree) {
  ManualTimeSource clock;
  ScriptedRun a{clock, {}, milliseconds(2)};
  ScriptedRun b{clock, {}, milliseconds(2)};
  SamplingOptions o = quick();
  o.min_samples = 25;
  Sampler sampler(clock, o);
  const PairedSampleSet set = sampler.measure_paired(a.timed(), b.timed());
  EXPECT_EQ(set.speedup.size(), 25u);
  EXPECT_EQ(verdict_of(set.speedup_estimate), Verdict::kIndistinguishable);
}

TEST(SamplerTest, PairedRunOfASlowPairGoesPastItsBudgetToTheRoundsAnIntervalNeeds) {
  ManualTimeSource clock;
  ScriptedRun a{clock, {}, milliseconds(100)};
  ScriptedRun b{clock, {}, milliseconds(150)};
  Sampler sampler(clock, quick());  // 500 ms: two rounds of 250 ms spend it
  const PairedSampleSet set = sampler.measure_paired(a.timed(), b.timed());
  EXPECT_EQ(set.speedup.size(), SamplingOptions{}.min_paired_rounds);
  EXPECT_EQ(set.stop, StopReason::kTimeBudgetSpent);
  EXPECT_EQ(verdict_of(set.speedup_estimate), Verdict::kFaster);
  EXPECT_DOUBLE_EQ(set.speedup_estimate.ratio, 1.5);
}

TEST(SamplerTest, APairThatOnlyDecidesStopsOnceItsIntervalExcludesOne) {
  // Rounds ±10% around their mean: the ±1% target needs many rounds, a verdict far fewer.
  const auto around = [](int mean_us) {
    std::deque<Nanoseconds> script;
    for (int i = 0; i < 3000; ++i)
      script.push_back(microseconds(mean_us + (i % 3 - 1) * mean_us / 10));
    return script;
  };
  ManualTimeSource clock;
  SamplingOptions o = quick();
  o.min_samples = 5;
  o.stop_when_decided = true;
  Sampler deciding(clock, o);
  ScriptedRun a{clock, {}, milliseconds(2)};
  ScriptedRun b{clock, around(3000), milliseconds(3)};
  const PairedSampleSet set = deciding.measure_paired(a.timed(), b.timed());
  EXPECT_EQ(set.stop, StopReason::kDecided);
  EXPECT_EQ(set.speedup.size(), kMinRatioRounds) << "two rounds in each order decide it";
  EXPECT_EQ(verdict_of(set.speedup_estimate), Verdict::kFaster);
  // Two sides that agree are not decided: the pair runs on as before.
  ScriptedRun c{clock, {}, milliseconds(2)};
  ScriptedRun d{clock, around(2000), milliseconds(2)};
  const PairedSampleSet same = deciding.measure_paired(c.timed(), d.timed());
  EXPECT_NE(same.stop, StopReason::kDecided);
  EXPECT_GT(same.speedup.size(), o.min_paired_rounds);
}

TEST(SamplerTest, PairedRunOfAVerySlowPairStopsAtThreeTimesItsBudget) {
  ManualTimeSource clock;
  ScriptedRun a{clock, {}, milliseconds(300)};
  ScriptedRun b{clock, {}, milliseconds(400)};
  Sampler sampler(clock, quick());
  const PairedSampleSet set = sampler.measure_paired(a.timed(), b.timed());
  // Rounds of 700 ms: the third ends past 1.5 s, three times the budget, and the run stops there
  // without an interval rather than run on.
  EXPECT_EQ(set.speedup.size(), 3u);
  EXPECT_EQ(verdict_of(set.speedup_estimate), Verdict::kUndetermined);
}

TEST(SamplerTest, APairedRunReadsTheMachinesLoadBetweenRoundsOnceAWindowHasPassed) {
  ManualTimeSource clock;
  ScriptedRun a{clock, {}, milliseconds(20)};
  ScriptedRun b{clock, {}, milliseconds(30)};
  SamplingOptions o = quick();
  o.time_budget = milliseconds(1500);
  o.min_samples = 30;  // 30 rounds of 50 ms: six windows of 250 ms
  Sampler sampler(clock, o);
  // 2 CPUs: each window adds 0.5 s of total CPU time; other work takes one core in the first
  // three windows and none after. Reads are counted: never one inside a block.
  CpuTimes t{0, 0, 0, 2};
  int reads = 0, calls_at_last_read = -1;
  sampler.set_load_probe([&]() -> std::optional<CpuTimes> {
    EXPECT_NE(a.calls + b.calls, calls_at_last_read) << "two reads with no round between";
    calls_at_last_read = a.calls + b.calls;
    if (reads++ > 0) {
      t.total_s += 0.5;
      t.busy_s += reads <= 4 ? 0.25 : 0.0;
    }
    return t;
  });
  const PairedSampleSet set = sampler.measure_paired(a.timed(), b.timed());
  ASSERT_EQ(set.speedup.size(), 30u);
  EXPECT_EQ(set.others_cores, (std::vector<double>{1, 1, 1, 0, 0, 0}));
  EXPECT_TRUE(round_load(set.others_cores).varied());
  // Without a probe, nothing is read.
  Sampler plain(clock, o);
  EXPECT_TRUE(plain.measure_paired(a.timed(), b.timed()).others_cores.empty());
}

TEST(SamplerTest, PairedRunAlternatesWhichSideGoesFirstAndEntersEachSideOnce) {
  ManualTimeSource clock;
  std::string order;
  int entered_a = 0, entered_b = 0;
  TimedRun a, b;
  a.iterate = [&] {
    order += 'A';
    clock.advance(milliseconds(2));
  };
  b.iterate = [&] {
    order += 'B';
    clock.advance(milliseconds(2));
  };
  a.enter = [&] { ++entered_a; };
  b.enter = [&] { ++entered_b; };
  Sampler sampler(clock, quick());
  sampler.measure_paired(a, b);
  // After the two warm-ups the rounds go AB, BA, AB … (blocks of one iteration here).
  const std::string rounds = order.substr(order.size() - 6);
  EXPECT_TRUE(rounds == "ABBAAB" || rounds == "BAABBA") << order;
  EXPECT_EQ(entered_a, 1);
  EXPECT_EQ(entered_b, 1);
}

TEST(SamplerTest, SidesTimedInAnotherProcessAreAskedForWholeBlocks) {
  ManualTimeSource clock;
  std::vector<std::size_t> asked;
  TimedRun a, b;
  a.block = [&](std::size_t n) {
    asked.push_back(n);
    clock.advance(milliseconds(1));  // the round trip: the supervisor's clock moves
    return Nanoseconds(n * 100000);  // the worker's own timing: 0.1 ms an iteration
  };
  b.block = [&](std::size_t n) { return Nanoseconds(n * 200000); };
  a.iterate = [] { FAIL() << "a remote side is never iterated here"; };
  Sampler sampler(clock, quick());
  const PairedSampleSet set = sampler.measure_paired(a, b);
  EXPECT_DOUBLE_EQ(set.speedup_estimate.ratio, 2.0);
  EXPECT_EQ(set.a.block_iterations, 10u);  // 1 ms blocks of the faster side
  EXPECT_EQ(asked.back(), 10u);
}

TEST(SamplerTest, AFailingBlockStillExitsItsProcessScope) {
  ManualTimeSource clock;
  int entered = 0, exited = 0, calls = 0;
  TimedRun run;
  run.iterate = [&] {
    clock.advance(milliseconds(2));
    if (++calls == 12) throw std::runtime_error("boom");
  };
  run.enter = [&] { ++entered; };
  run.exit = [&] { ++exited; };
  Sampler sampler(clock, quick());
  EXPECT_THROW(sampler.measure(run), std::runtime_error);
  EXPECT_EQ(entered, 1);
  EXPECT_EQ(exited, 1);
}

TEST(SamplerTest, ACallLongerThanTheBudgetStopsTheRunAfterTheSecondCall) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {}, milliseconds(2000)};
  SamplingOptions o = quick();
  o.stop_when_a_call_exceeds_budget = true;
  Sampler sampler(clock, o);
  const SampleSet set = sampler.measure(work.timed());
  EXPECT_EQ(set.stop, StopReason::kCallOverBudget);
  EXPECT_TRUE(set.warmup.over_budget);
  EXPECT_EQ(work.calls, 2);  // the cold call, and one warm call that confirms it
  ASSERT_EQ(set.summary.count, 1u);
  EXPECT_DOUBLE_EQ(set.summary.median, 2e9);
}

TEST(SamplerTest, OnlyAColdFirstCallOverTheBudgetDoesNotStopTheRun) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {milliseconds(2000)}, milliseconds(2)};
  SamplingOptions o = quick();
  o.stop_when_a_call_exceeds_budget = true;
  Sampler sampler(clock, o);
  const SampleSet set = sampler.measure(work.timed());
  EXPECT_FALSE(set.warmup.over_budget);
  EXPECT_EQ(set.stop, StopReason::kConfidenceReached);
}

TEST(SamplerTest, APairWithASideOverTheBudgetStopsWithBothSidesSayingSo) {
  ManualTimeSource clock;
  ScriptedRun a{clock, {}, milliseconds(2)};
  ScriptedRun b{clock, {}, milliseconds(3000)};
  SamplingOptions o = quick();
  o.stop_when_a_call_exceeds_budget = true;
  Sampler sampler(clock, o);
  const PairedSampleSet set = sampler.measure_paired(a.timed(), b.timed());
  EXPECT_EQ(set.stop, StopReason::kCallOverBudget);
  EXPECT_EQ(set.b.stop, StopReason::kCallOverBudget);
  EXPECT_TRUE(set.speedup.empty());
}

TEST(SamplerTest, StopReasonsHaveStableNames) {
  EXPECT_EQ(to_string(StopReason::kConfidenceReached), "confidence-reached");
  EXPECT_EQ(to_string(StopReason::kTimeBudgetSpent), "time-budget-spent");
}

}  // namespace torchperf

namespace torchperf {
namespace {

TEST(SamplerTest, ARunClearlyBehindTheLeaderStopsAfterItsWarmUp) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {}, milliseconds(10)};
  SamplingOptions o = quick();
  o.leader_iteration_ns = 5e6;  // the leader's pace: 5 ms a call, this run's 10
  const SampleSet set = Sampler(clock, o).measure(work.timed());
  EXPECT_EQ(set.stop, StopReason::kBehindLeader);
  EXPECT_EQ(set.iteration_ns.size(), 1u) << "the settled warm-up stands as its one sample";
  EXPECT_DOUBLE_EQ(set.summary.median, 1e7);
  EXPECT_EQ(to_string(set.stop), "behind-leader");
}

TEST(SamplerTest, ARunFarBehindTheLeaderStopsAtItsFirstTwoWarmCalls) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {}, milliseconds(40)};
  SamplingOptions o = quick();
  o.leader_iteration_ns = 10e6;  // 4x the leader's pace
  const SampleSet set = Sampler(clock, o).measure(work.timed());
  EXPECT_EQ(set.stop, StopReason::kBehindLeader);
  EXPECT_EQ(work.calls, 3) << "the cold call and two warm ones";
  EXPECT_DOUBLE_EQ(set.summary.median, 4e7);
  // One slow warm call (TorchScript's profiling executor optimising) is not far behind: the run
  // at the leader's pace after it is measured to its stopping rule.
  ScriptedRun optimising{clock, {milliseconds(40), milliseconds(40)}, milliseconds(10)};
  const SampleSet level = Sampler(clock, o).measure(optimising.timed());
  EXPECT_NE(level.stop, StopReason::kBehindLeader);
  // 2.5x behind is not far: it settles its warm-up first, then stops as clearly behind.
  ScriptedRun behind{clock, {}, milliseconds(25)};
  const SampleSet settled = Sampler(clock, o).measure(behind.timed());
  EXPECT_EQ(settled.stop, StopReason::kBehindLeader);
  EXPECT_GT(behind.calls, 2);
}

TEST(SamplerTest, ARunSlightlyBehindStopsOnlyWhenItsFastestBlockIsClearlyBehind) {
  ManualTimeSource clock;
  // 1.2x the leader's pace: not behind after warm-up (1.5x), behind once two blocks agree (1.15x).
  ScriptedRun work{clock, {}, milliseconds(12)};
  SamplingOptions o = quick();
  o.leader_iteration_ns = 10e6;
  const SampleSet set = Sampler(clock, o).measure(work.timed());
  EXPECT_EQ(set.stop, StopReason::kBehindLeader);
  EXPECT_EQ(set.iteration_ns.size(), kBehindBlocks);
}

TEST(SamplerTest, ARunLevelWithTheLeaderIsMeasuredToItsStoppingRule) {
  ManualTimeSource clock;
  ScriptedRun work{clock, {}, milliseconds(11)};
  SamplingOptions o = quick();
  o.leader_iteration_ns = 10e6;  // 1.1x: within the noise a brief point has
  const SampleSet set = Sampler(clock, o).measure(work.timed());
  EXPECT_EQ(set.stop, StopReason::kConfidenceReached);
  EXPECT_EQ(set.summary.count, 10u);
}

TEST(SamplerTest, TheLeadersPaceIsItsSamplesPerSecondAtThisRunsSamplesPerCall) {
  EXPECT_DOUBLE_EQ(against_leader(SamplingOptions{}, 100, 16).leader_iteration_ns, 0.16e9);
  EXPECT_DOUBLE_EQ(against_leader(SamplingOptions{}, 0, 16).leader_iteration_ns, 0)
      << "no leader yet: nothing stops early";
}

}  // namespace
}  // namespace torchperf
