// Distribution-free bounds on a quantile from order statistics, for the tails a latency objective
// is about (p99, p99.9): the ranks come from the exact binomial distribution of how many samples
// fall below the quantile, where a normal approximation would be wrong.
#pragma once

#include <cstddef>
#include <vector>

#include "torchperf/measure/statistics.h"

namespace torchperf {

// Two-sided confidence interval of the q-quantile of already sorted samples. An end is NaN where
// the sample is too small for it: a p99.9 of 100 latencies has no upper end.
Interval quantile_confidence_interval_sorted(const std::vector<double>& sorted, double q,
                                             double confidence);

// The smallest order statistic that is at least the true q-quantile with probability
// `confidence` (one-sided: "p99 <= this, at 99%"), or NaN when there are too few samples for any.
double quantile_upper_bound_sorted(const std::vector<double>& sorted, double q, double confidence);

// The fewest samples for which quantile_upper_bound_sorted has a bound (459 at q = confidence =
// 0.99: the largest of 459 samples is above the p99 with probability 1 - 0.99^459 >= 0.99).
std::size_t samples_for_quantile_upper_bound(double q, double confidence);

}  // namespace torchperf
