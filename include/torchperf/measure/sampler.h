// The timing core: warm-up until iteration time settles, then timed blocks of iterations (the
// device synchronised at each block end) until the confidence interval of the median is tight
// enough or the time budget is spent. Knows nothing of models: it times a callable.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "torchperf/measure/clock.h"
#include "torchperf/measure/machine_load.h"
#include "torchperf/measure/ratio_estimate.h"
#include "torchperf/measure/statistics.h"

namespace torchperf {

struct SamplingOptions {
  Nanoseconds time_budget = std::chrono::seconds(3);    // the measurement phase
  Nanoseconds warmup_budget = std::chrono::seconds(3);  // cap on warm-up; not settling is reported
  double target_relative_ci = 0.01;                     // stop when the median's CI is within ±1%
  double confidence = 0.95;
  std::size_t min_samples = 10;  // blocks (or rounds of a pair) before the stopping rule may stop
  std::size_t max_samples = 200000;
  Nanoseconds min_block_time = std::chrono::milliseconds(1);  // dwarfs clock resolution (~20 ns)
  std::size_t warmup_window =
      3;  // settled: median of the last window within tolerance of the one before
  double warmup_tolerance = 0.05;
  std::size_t min_warmup_iterations = 3;  // TorchScript's profiling executor optimises after 2 runs
  // A paired run goes past its budget, up to paired_overrun times it, to reach the rounds a
  // ratio's interval needs.
  std::size_t min_paired_rounds = kMinRatioRounds + 1;
  double paired_overrun = 3;
  // Bench's bound: when the first two calls each take longer than the whole time budget, no
  // sample fits in it; the run stops there (StopReason::kCallOverBudget) instead of running on.
  // The first call alone may be slow for its one-off costs (the profiling executor, oneDNN's
  // primitive creation): the second one decides.
  bool stop_when_a_call_exceeds_budget = false;
  // A tune's point against its leader (issue 60): the leader's time per iteration at this run's
  // samples per call (0: no leader). A run whose settled warm-up is kBehindAfterWarmup times
  // slower, or whose fastest block after kBehindBlocks is kBehindAfterBlocks times slower, is
  // clearly behind: it stops (StopReason::kBehindLeader), and its time goes to other points.
  double leader_iteration_ns = 0;
  // A paired run that only decides (a tune's head-to-head): it stops once the ratio's interval,
  // after min_decided_rounds, lies wholly above or below 1 (StopReason::kDecided): more rounds
  // narrow the figure, not the verdict, and their time is the budget's. Four rounds are the
  // fewest with an interval, two in each order; a fifth cost bench 23's pair against its careful
  // loop 8 s.
  bool stop_when_decided = false;
  std::size_t min_decided_rounds = kMinRatioRounds;
};
// The options with the leader's pace set from its samples/s and this run's samples per call.
SamplingOptions against_leader(SamplingOptions options, double leader_samples_per_s,
                               double samples_per_call);
inline constexpr double kBehindAfterWarmup = 1.5;
// Far behind: both of its first two calls after the cold one, before the warm-up settles (a
// call there may still be warming, so the bar is twice the settled one's).
inline constexpr double kFarBehindInWarmUp = 3;
inline constexpr double kBehindAfterBlocks = 1.15;
inline constexpr std::size_t kBehindBlocks = 2;

// A device that runs its work asynchronously (CUDA) idles at each block's end: the block waits
// for it, and the next block's first launch reaches it only after that. On an H100 this gap was
// 0.13 ms a block: one-call blocks of a 1.06 ms ResNet-18 under CUDA graphs measured 1.19 ms a
// call, 11% slow (issue 40). Blocks of at least this long keep the gap under 0.5%.
inline constexpr Nanoseconds kAsynchronousDeviceMinBlockTime = std::chrono::milliseconds(25);
// A block of a Python worker is asked for over a pipe: between two blocks its interpreter reads
// and writes JSON, which evicts the caches the next block's first calls run in. On a 45 µs call
// (an MLP at batch 8), 1 ms blocks read 0.93x of a plain loop timed by torch.utils.benchmark.
inline constexpr Nanoseconds kPythonWorkerMinBlockTime = std::chrono::milliseconds(25);

// What is timed: one iteration, and the wait for the device to finish what was queued.
// enter() sets the process state the measurement needs (threads, fuser flags) once, before
// warm-up, and exit() restores it after the last block: a state change never lands between or
// inside timed blocks, where it would be paid for (LibTorch 1.13 rebuilds its thread pool and
// clears oneDNN's primitive cache on every set_num_threads).
// A side that lives in another process sets block: it runs and times a block of iterations
// there, synchronised, and returns the time; iterate and synchronize are then unused.
struct TimedRun {
  std::function<void()> iterate = [] {};
  std::function<void()> synchronize = [] {};
  std::function<void()> enter = [] {};
  std::function<void()> exit = [] {};
  std::function<Nanoseconds(std::size_t iterations)> block;
};

struct Warmup {
  Nanoseconds first_call{0};   // the cold first call, on its own
  std::size_t iterations = 0;  // including the first call
  Nanoseconds total{0};
  bool settled = false;
  double settled_iteration_ns = 0;  // median of the last window: the per-iteration estimate
  bool over_budget = false;  // a warm call took longer than the time budget (see SamplingOptions)
};

enum class StopReason {
  kConfidenceReached,
  kTimeBudgetSpent,
  kSampleLimit,
  kCallOverBudget,
  kBehindLeader,
  kDecided  // a paired run's verdict (SamplingOptions::stop_when_decided)
};
std::string to_string(StopReason reason);

struct SampleSet {
  Warmup warmup;
  std::size_t block_iterations = 1;
  std::vector<double> iteration_ns;  // one per block: block time / block_iterations
  Nanoseconds measured{0};           // wall time of the measurement phase
  StopReason stop = StopReason::kTimeBudgetSpent;
  Summary summary;  // of iteration_ns
};

struct PairedSampleSet {
  SampleSet a;
  SampleSet b;
  std::vector<double> speedup;  // per round: B's iteration time / A's, so > 1 means A is faster
  RatioEstimate speedup_estimate;
  StopReason stop = StopReason::kTimeBudgetSpent;
  // Other work's cores in each window of rounds, when the sampler has a load probe.
  std::vector<double> others_cores;
};

// The machine's CPU times now (read_cpu_times), or nullopt; a paired run reads it between rounds.
using LoadProbe = std::function<std::optional<CpuTimes>()>;
// A window of rounds long enough for /proc/stat's 10 ms ticks to tell half a core from none.
inline constexpr Nanoseconds kLoadWindow = std::chrono::milliseconds(250);

class Sampler {
 public:
  using Progress = std::function<void(double fraction_done)>;

  Sampler(TimeSource& time, SamplingOptions options);

  // Warm-up alone, in whatever state the caller has entered.
  Warmup warm_up(const TimedRun& run);
  // enter(), warm-up, timed blocks until the median's interval is tight or the budget is spent,
  // exit() (also when a block throws).
  SampleSet measure(const TimedRun& run, const Progress& progress = nullptr);
  // A and B in alternating blocks (A B, B A, A B …) so that drift of a shared machine hits both
  // alike; stops on the interval of the ratio (ratio_estimate.h). Both enter() run once before
  // warm-up: two sides in one process must need the same process state (the caller checks);
  // sides that differ in it run in two processes, each a TimedRun with block set.
  PairedSampleSet measure_paired(const TimedRun& a, const TimedRun& b,
                                 const Progress& progress = nullptr);
  // Read between rounds (never inside a block), once a window has passed: others_cores.
  void set_load_probe(LoadProbe probe) { load_probe_ = std::move(probe); }

  const SamplingOptions& options() const { return options_; }

 private:
  Nanoseconds time_block(const TimedRun& run, std::size_t iterations);
  std::size_t block_size_for(double iteration_ns) const;
  bool precise_enough(const std::vector<double>& samples, std::size_t& next_check) const;
  bool ratio_precise_enough(const std::vector<double>& ratios, std::size_t& next_check) const;

  TimeSource& time_;
  SamplingOptions options_;
  LoadProbe load_probe_;
};

}  // namespace torchperf
