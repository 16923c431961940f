// The one place where two interleaved series are compared: the per-round ratios B/A summarised as
// a geometric mean with a Student t interval on their logarithms, and the verdict it supports.
// Every paired comparison (bench --vs, tune's head-to-head, train's ladder) reads it from here.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "torchperf/measure/statistics.h"

namespace torchperf {

// What an interval on a ratio A-over-B says about A.
enum class Verdict { kFaster, kSlower, kIndistinguishable, kUndetermined };
std::string to_string(Verdict verdict);
// Throws std::invalid_argument for a name that is not one of to_string's.
Verdict verdict_from_string(const std::string& name);

struct RatioEstimate {
  double ratio = 0;        // geometric mean of the per-round ratios
  Interval interval;       // confidence interval of the ratio; NaN ends below min_rounds
  std::size_t rounds = 0;  // the ratios it was computed from
  // The largest distance from the ratio to an interval end, as a fraction of the ratio (the
  // stopping rule's measure); NaN without an interval.
  double relative_half_width = 0;
  // Median and spread of the per-round ratios, for readers who want them beside the mean.
  double median = 0;
  double min = 0, max = 0;
};

// The fewest rounds an interval is computed from: a t interval from 2 or 3 log ratios is
// formally defined but so wide, and so sensitive to one outlier, that it is not reported.
inline constexpr std::size_t kMinRatioRounds = 4;

// ratios[i] > 0: round i's B time over A time (or A's throughput over B's), so > 1 favours A.
// Non-positive or non-finite ratios are a caller's bug: std::invalid_argument.
RatioEstimate estimate_ratio(const std::vector<double>& ratios, double confidence = 0.95);

// The estimate with the ratio and both ends multiplied by factor (> 0): a change of units, such
// as per-call time to samples/s when the two sides run different batch sizes.
RatioEstimate scaled(RatioEstimate estimate, double factor);

// The one place a ratio's interval becomes a verdict on A: kFaster when the whole interval is
// above 1, kSlower when below, kIndistinguishable when it holds 1, kUndetermined without an
// interval (an end that is NaN or infinite). Bench, tune, lint, train's ladder, the effects and
// the reports all ask it.
Verdict verdict_of(const Interval& interval);
Verdict verdict_of(const RatioEstimate& estimate);

}  // namespace torchperf
