#include "torchperf/train/step_breakdown.h"

#include <algorithm>

namespace torchperf {

const char* phase_name(Phase phase) {
  static const char* kNames[] = {"data wait", "copy",  "forward",   "backward",
                                 "optimizer", "other", "all-reduce"};
  return kNames[static_cast<std::size_t>(phase)];
}

const char* phase_key(Phase phase) {
  static const char* kKeys[] = {"data_wait", "copy",  "forward",   "backward",
                                "optimizer", "other", "all_reduce"};
  return kKeys[static_cast<std::size_t>(phase)];
}

double Breakdown::memory_fraction() const {
  if (peak_memory_bytes < 0 || memory_capacity_bytes <= 0) return -1;
  return static_cast<double>(peak_memory_bytes) / static_cast<double>(memory_capacity_bytes);
}

Phase Breakdown::dominant_phase() const {
  const auto it = std::max_element(share.begin(), share.end());
  return phase_at(static_cast<std::size_t>(it - share.begin()));
}

Breakdown summarize_steps(const std::vector<StepTimes>& steps) {
  Breakdown b;
  b.steps = steps.size();
  if (steps.empty()) return b;
  double total = 0;
  std::int64_t samples = 0;
  std::vector<double> step_ns;
  for (const auto& s : steps) {
    for (std::size_t i = 0; i < kPhaseCount; ++i) b.mean_ns[i] += s.ns[i];
    total += s.total_ns;
    samples += s.samples;
    step_ns.push_back(s.total_ns);
    if (!s.stepped) ++b.skipped_steps;
  }
  for (auto& m : b.mean_ns) m /= static_cast<double>(steps.size());
  b.step_ns = total / static_cast<double>(steps.size());
  for (std::size_t i = 0; i < kPhaseCount; ++i)
    b.share[i] = b.step_ns > 0 ? b.mean_ns[i] / b.step_ns : 0;
  b.step_summary = summarize(step_ns);
  b.samples_per_second = total > 0 ? static_cast<double>(samples) / (total * 1e-9) : 0;
  b.utilisation = b.share_of(Phase::kForward) + b.share_of(Phase::kBackward) +
                  b.share_of(Phase::kOptimizer);
  return b;
}

RankBreakdown summarize_rank(int rank, const std::string& host, const std::vector<StepTimes>& steps,
                             std::int64_t peak_memory_bytes) {
  RankBreakdown r;
  r.rank = rank;
  r.host = host;
  r.peak_memory_bytes = peak_memory_bytes;
  const Breakdown b = summarize_steps(steps);
  r.mean_ns = b.mean_ns;
  r.step_ns = b.step_ns;
  r.busy_ns = b.step_ns - b.mean_of(Phase::kAllReduce);
  return r;
}

double straggler_gap_ns(const std::vector<RankBreakdown>& ranks) {
  if (ranks.size() < 2) return 0;
  std::vector<double> busy;
  for (const auto& r : ranks) busy.push_back(r.busy_ns);
  std::sort(busy.begin(), busy.end());
  const std::size_t n = busy.size();
  const double median = n % 2 ? busy[n / 2] : (busy[n / 2 - 1] + busy[n / 2]) / 2;
  return busy.back() - median;
}

}  // namespace torchperf
