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

enum class Phase { kDataWait, kCopy, kForward, kBackward, kOptimizer, kOther };
inline constexpr std::size_t kPhaseCount = 6;
// "data wait", "copy", "forward", "backward", "optimizer", "other"
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

  double share_of(Phase p) const { return share[static_cast<std::size_t>(p)]; }
  double mean_of(Phase p) const { return mean_ns[static_cast<std::size_t>(p)]; }
  // Peak memory as a fraction of capacity, or -1 when either is unknown.
  double memory_fraction() const;
  Phase dominant_phase() const;
};

Breakdown summarize_steps(const std::vector<StepTimes>& steps);

}  // namespace torchperf
