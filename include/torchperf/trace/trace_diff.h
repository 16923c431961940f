// Two traces compared: the step breakdown side by side, and the operators and kernels added,
// removed, slower and faster, per step (so traces of different lengths compare). Torch-free.
#pragma once

#include <string>
#include <vector>

#include "torchperf/trace/trace_analysis.h"

namespace torchperf {

// A change smaller than this share of the larger side (or than kDiffFloorNs per step) is "same".
inline constexpr double kDiffThreshold = 0.05;
inline constexpr double kDiffFloorNs = 1000;

enum class Change { kAdded, kRemoved, kSlower, kFaster, kSame };
const char* change_name(Change change);

struct DiffRow {
  std::string name;
  std::string kind;                          // "operator" or a kernel class
  double before = 0, after = 0;              // ns per step (host self time for operators)
  double calls_before = 0, calls_after = 0;  // per step
  Change change = Change::kSame;
  double delta() const { return after - before; }
};

struct TraceDiff {
  std::string before, after;              // the paths
  StepBreakdown step_before, step_after;  // the average steps
  std::size_t steps_before = 0, steps_after = 0;
  std::vector<DiffRow> operators, kernels;  // largest |delta| first; "same" rows last
};

TraceDiff diff_traces(const TraceAnalysis& before, const TraceAnalysis& after);

}  // namespace torchperf
