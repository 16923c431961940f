// Where a training step's time goes: the phases of each step (measured with the device
// synchronised at every boundary, so they add up to the step's wall time) and their average over
// the measured steps, with throughput, compute utilisation and peak memory. Torch-free.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/measure/statistics.h"

namespace torchperf {

// kAllReduce, last: the gradients' all-reduce that DDP's backward waited for beyond its own
// compute (measured apart: backward under no_sync is backward alone); 0 in one process.
enum class Phase { kDataWait, kCopy, kForward, kBackward, kOptimizer, kOther, kAllReduce };
inline constexpr std::size_t kPhaseCount = 7;
// "data wait", "copy", "forward", "backward", "optimizer", "other", "all-reduce"
const char* phase_name(Phase phase);
const char* phase_key(Phase phase);  // data_wait, copy, forward, backward, optimizer, other
inline Phase phase_at(std::size_t i) { return static_cast<Phase>(i); }

struct StepTimes {
  std::array<double, kPhaseCount> ns{};  // in the order of Phase, which is the order they run in
  double total_ns = 0;                   // wall time of the step; `other` is what the rest miss
  std::int64_t start_us = 0;             // wall-clock start (microseconds since the epoch)
  std::int64_t samples = 0;
  bool stepped = true;  // false when the gradient scaler skipped the optimizer step
  double loss = 0;
};

// One DDP rank's steps: its phases' means, so that a slow rank shows (the straggler gap).
struct RankBreakdown {
  int rank = 0;
  std::string host;
  std::array<double, kPhaseCount> mean_ns{};
  double step_ns = 0;
  double busy_ns = 0;  // the step without its exposed all-reduce: the rank's own work
  std::int64_t peak_memory_bytes = -1;
};

struct Breakdown {
  std::size_t steps = 0;
  std::array<double, kPhaseCount> mean_ns{};
  std::array<double, kPhaseCount> share{};  // of the mean step time; sums to 1
  double step_ns = 0;                       // mean wall time per step
  Summary step_summary;                     // of step times: median and its CI
  double samples_per_second = 0;            // all samples over all step time
  double utilisation = 0;                   // share of forward + backward + optimizer
  std::int64_t peak_memory_bytes = -1;      // process RSS on CPU, allocator peak on CUDA
  std::int64_t memory_capacity_bytes = -1;  // what the device or the process may use
  std::size_t skipped_steps = 0;            // by the gradient scaler
  std::size_t skipped_examples = 0;         // corrupt images
  // DDP: every rank's own (the step times above are the slowest rank's), and how much longer the
  // slowest rank's own work is than the median rank's: what the others wait for.
  std::vector<RankBreakdown> ranks;
  double straggler_gap_ns = 0;
  // From the Python step with --memory-cap: bytes a forward keeps for backward, as configured
  // and with every repeated block checkpointed (-1: not measured), at this batch.
  std::int64_t activation_bytes = -1;
  std::int64_t checkpointed_activation_bytes = -1;
  int unused_parameters = -1;  // DDP: parameters a step leaves without a gradient (-1: unknown)

  double share_of(Phase p) const { return share[static_cast<std::size_t>(p)]; }
  double mean_of(Phase p) const { return mean_ns[static_cast<std::size_t>(p)]; }
  // Peak memory as a fraction of capacity, or -1 when either is unknown.
  double memory_fraction() const;
  Phase dominant_phase() const;
};

Breakdown summarize_steps(const std::vector<StepTimes>& steps);

// One rank's summary from its steps.
RankBreakdown summarize_rank(int rank, const std::string& host, const std::vector<StepTimes>& steps,
                             std::int64_t peak_memory_bytes);
// The slowest rank's own work over the median rank's, in ns (0 for fewer than two ranks).
double straggler_gap_ns(const std::vector<RankBreakdown>& ranks);

}  // namespace torchperf
