#include "torchperf/measure/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

namespace torchperf {
namespace {

// P(X <= k) for X ~ Binomial(n, 1/2).
double binomial_half_cdf(std::size_t n, std::size_t k) {
  double log_term = -static_cast<double>(n) * std::log(2.0);  // log C(n,0) / 2^n
  double sum = std::exp(log_term);
  for (std::size_t i = 1; i <= k; ++i) {
    log_term += std::log(static_cast<double>(n - i + 1)) - std::log(static_cast<double>(i));
    sum += std::exp(log_term);
  }
  return sum;
}

}  // namespace

double normal_two_sided_quantile(double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("confidence must be in (0,1)");
  return boost::math::quantile(boost::math::normal_distribution<double>(), 0.5 + confidence / 2);
}

double student_t_two_sided_quantile(double confidence, double df) {
  if (!(df > 0)) throw std::invalid_argument("degrees of freedom must be positive");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("confidence must be in (0,1)");
  return boost::math::quantile(boost::math::students_t_distribution<double>(df),
                               0.5 + confidence / 2);
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Interval median_confidence_interval_sorted(const std::vector<double>& sorted, double confidence) {
  const std::size_t n = sorted.size();
  if (n == 0) return {};
  if (n <= 30) {
    // Largest k with P(X <= k-1) <= alpha/2: the interval [x_(k), x_(n-k+1)] (1-based) covers the
    // median with probability >= confidence.
    const double alpha = 1 - confidence;
    std::size_t k = 0;
    while (k + 1 <= n / 2 && binomial_half_cdf(n, k) <= alpha / 2) ++k;
    // Below 6 samples even [min, max] covers the median with less than 95%: there is no interval.
    if (k == 0) return {std::nan(""), std::nan("")};
    return {sorted[k - 1], sorted[n - k]};
  }
  const double z = normal_two_sided_quantile(confidence);
  const double half = z * std::sqrt(static_cast<double>(n)) / 2;
  const double center = static_cast<double>(n) / 2;
  // 1-based ranks floor(n/2 - half) and ceil(1 + n/2 + half), as 0-based indices.
  const auto lo = static_cast<long>(std::floor(center - half)) - 1;
  const auto hi = static_cast<long>(std::ceil(center + half));
  const auto clamp = [n](long i) {
    return static_cast<std::size_t>(std::clamp<long>(i, 0, static_cast<long>(n) - 1));
  };
  return {sorted[clamp(lo)], sorted[clamp(hi)]};
}

Summary summarize(std::vector<double> values, double confidence) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.count);
  double ss = 0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.stddev = s.count > 1 ? std::sqrt(ss / static_cast<double>(s.count - 1)) : 0;
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  s.median = quantile_sorted(values, 0.5);
  s.p90 = quantile_sorted(values, 0.90);
  s.p99 = quantile_sorted(values, 0.99);
  s.median_ci = median_confidence_interval_sorted(values, confidence);
  s.median_ci_relative =
      std::isnan(s.median_ci.low) ? std::nan("")
      : s.median != 0
          ? std::max(s.median - s.median_ci.low, s.median_ci.high - s.median) / std::fabs(s.median)
          : 0;
  return s;
}

}  // namespace torchperf
