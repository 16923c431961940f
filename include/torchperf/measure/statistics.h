// Robust summary statistics of timing samples: median with a distribution-free confidence interval
// (order statistics, so no normality is assumed), percentiles, and the coefficient of variation.
#pragma once

#include <cstddef>
#include <vector>

namespace torchperf {

struct Interval {
  double low = 0;
  double high = 0;
};

struct Summary {
  std::size_t count = 0;
  double mean = 0;
  double stddev = 0;
  double cv = 0;  // stddev / mean
  double min = 0;
  double max = 0;
  double median = 0;
  double p90 = 0;
  double p99 = 0;
  Interval median_ci;             // at the confidence level asked for
  double median_ci_relative = 0;  // largest distance from median to a CI end, as a fraction of it
};

// Linear-interpolated quantile of already sorted values; q in [0, 1].
double quantile_sorted(const std::vector<double>& sorted, double q);

// Confidence interval of the median from order statistics (binomial ranks, normal approximation
// for n > 30, exact for smaller n). NaN ends when n is too small for one to exist (n < 6 at 95%).
Interval median_confidence_interval_sorted(const std::vector<double>& sorted, double confidence);

Summary summarize(std::vector<double> values, double confidence = 0.95);

// Two-sided standard normal quantile for a confidence level, e.g. 0.95 -> 1.96 (Boost.Math).
double normal_two_sided_quantile(double confidence);

// Two-sided Student t quantile, e.g. (0.95, 10) -> 2.228 (Boost.Math).
double student_t_two_sided_quantile(double confidence, double degrees_of_freedom);

}  // namespace torchperf
