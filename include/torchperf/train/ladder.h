// The ladder: start from the naive loop, read its breakdown, try the change the largest
// bottleneck calls for, keep it only if it wins head to head (interleaved rounds, a confidence
// interval on the throughput ratio), and climb until no change helps. A change that loses is
// recorded and the next is tried; counts (loader workers, batch) are sized to the machine.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/config/configuration.h"
#include "torchperf/measure/ratio_estimate.h"
#include "torchperf/measure/statistics.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/train/advice.h"
#include "torchperf/train/step_breakdown.h"

namespace torchperf {

struct TrainingContext;
class TrainingSession;

struct HeadToHeadOptions {
  std::size_t rounds = 4;        // A then B, B then A, … (at least 3 for an interval)
  // While the interval cannot tell whether B gains min_gain (it straddles 1 + min_gain, or 1),
  // two more rounds at a time, up to this many: 4 rounds give a t quantile of 3.18, so on a
  // noisy machine a 30% gain could go unproven.
  std::size_t max_rounds = 12;
  double min_gain = 0.02;        // a change must be at least 2% faster, its interval above 1
  std::size_t steps = 3;         // timed steps per block
  std::size_t settle_steps = 1;  // untimed steps at each block start (drain the prefetch queue)
  double confidence = 0.95;
  // Asked before two more rounds of an undecided comparison: false keeps what is measured (the
  // ladder's --budget is spent). Unset: always extend up to max_rounds.
  std::function<bool()> may_extend;
};

struct Speedup {
  double ratio = 1;    // B's samples/s over A's (geometric mean over rounds)
  Interval interval;   // Student t on the log ratios
  std::vector<double> rounds;
  bool wins(double min_gain) const {
    return verdict_of(interval) == Verdict::kFaster && ratio >= 1.0 + min_gain;
  }
  // Won, or cannot win: even the interval's top is below 1 + min_gain.
  bool decided(double min_gain) const {
    return wins(min_gain) || interval.high < 1.0 + min_gain;
  }
};

// Alternates the two throughput measurements (A B, B A, A B, …, after_block between blocks) and
// summarises the per-round ratios B/A: geometric mean and a Student t interval on their logs.
// After options.rounds, goes on two rounds at a time up to options.max_rounds while the result
// is not decided (see Speedup::decided).
Speedup compare_throughputs(const std::function<double()>& a, const std::function<double()>& b,
                            const HeadToHeadOptions& options,
                            const std::function<void()>& after_block = nullptr);

// One block of a session: settle steps, then timed steps without the per-phase synchronisation;
// samples/s. The session's process state must already be entered (once, by the caller).
double block_throughput(TrainingSession& session, const HeadToHeadOptions& options);

// Interleaves the two sessions' steps in this process and compares their throughput. The two
// must agree on process state (threads, cudnn_benchmark): it is entered once for the whole
// comparison. Sessions that differ in it are compared in two workers (climb does this).
Speedup head_to_head(TrainingSession& a, TrainingSession& b, const HeadToHeadOptions& options,
                     const std::function<void()>& after_block = nullptr);

struct LadderOptions {
  HeadToHeadOptions compare;
  std::size_t warmup_steps = 2;     // per new session, before anything is measured
  std::size_t breakdown_steps = 5;  // per rung
  bool allow_semantic_changes = false;
  std::size_t max_rungs = 10;
  // Seconds the climb may take; 0: no limit. Under a budget the advised changes are tried by
  // expected gain per second of trying them, and one whose price (price_of_attempt) does not fit
  // in what is left is held back, not started; the estimate may still be short (one may run past).
  double budget_s = 0;
  // Where a change alters process state (threads=1 -> 2), each side of its head-to-head runs in a
  // worker process of its own, started from this; without it such changes are held back.
  std::optional<WorkerRun> workers;
  // Replaces the head-to-head measurement with a given verdict (tests script which change wins;
  // the sessions, breakdowns and advice stay real).
  std::function<Speedup(const Configuration& from, const Configuration& to)> verdict;
};

struct Attempt {
  std::string change;  // "workers=1"
  std::string rule;
  Speedup speedup;
  bool kept = false;
  bool separate_processes = false;  // each side in its own worker (they differ in process state)
  bool changes_training = false;    // batch size, precision: what is learned changes
  double compile_s = -1;            // the change's torch.compile time, apart from its steps
  // Why the candidate could not run (out of memory under --memory-cap, a setting its step
  // refused), or "": such a change is not kept, and the climb goes on.
  std::string failure;
  bool out_of_memory = false;  // the failure was the memory's (ResourceLimit)
};

struct Rung {
  std::size_t step = 0;      // 0 is the naive loop
  std::string change;        // "" for step 0
  std::string rule;          // the advice that proposed it
  bool changes_training = false;
  Configuration configuration;
  bool in_python = false;    // the step runs in the Python training worker
  double compile_s = -1;     // its torch.compile time (not in the step times), or -1
  Breakdown breakdown;
  Speedup speedup;           // over the previous rung (1 for step 0)
  double cumulative = 1;     // over step 0: product of the kept speedups
  std::vector<Advice> advice;  // what the breakdown of this rung calls for
};

struct LadderResult {
  std::vector<Rung> rungs;
  std::vector<Attempt> attempts;   // every change tried, kept or not, in order
  // Advised but not tried: changes of what is learned without --allow-semantic-changes, each with
  // what the breakdown says it could give ("amp=bf16 (reduced-precision): up to 1.43x …"), and
  // changes whose price did not fit in the --budget left.
  std::vector<std::string> held_back;
  std::string stop_reason;
  // What the climb changed on its own to go on: the loop as given over the memory, started with
  // its repeated blocks checkpointed.
  std::vector<std::string> notes;
};

struct LadderEvents {
  std::function<void(const std::string& what)> status;  // what is being measured now
  std::function<void(const Rung&)> rung;
  std::function<void(const Attempt&)> attempt;
  // Polled between blocks and attempts; true stops the climb with Interrupted, which names the
  // last kept rung's configuration to start from next time.
  std::function<bool()> stop_requested;
};

// What trying one change is expected to cost, from what the climb has measured so far: the
// comparison as the last one without a compile took (before any, the loop as given's first
// breakdown), a compile as the largest measured (before any, kCompilePriorS), and the breakdown
// a kept change's rung then takes, as the last one took.
struct AttemptPrices {
  double comparison_s = 0;
  double compile_s = 0;
  double rung_s = 0;
};
// A torch.compile of a training step before anything is measured, a prior (not a measurement of
// this model): the ranks test's 4-block MLP compiled forward and backward in 16.9 s on 2 cores,
// a larger model takes longer; the first compile measured in the climb replaces it.
inline constexpr double kCompilePriorS = 30;
double price_of_attempt(const AttemptPrices& prices, bool compiles);

// Indices of the changes by expected gain (weight: the share of the step it addresses) per second
// of its price, largest first; equal ones keep their order.
std::vector<std::size_t> order_by_gain_per_second(const std::vector<double>& weights,
                                                  const std::vector<double>& prices_s);

// time: what the budget is read on.
LadderResult climb(const TrainingContext& context, const Configuration& start,
                   const LadderOptions& options, const LadderEvents& events = {},
                   TimeSource& time = steady_time());

}  // namespace torchperf
