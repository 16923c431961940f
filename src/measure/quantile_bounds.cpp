#include "torchperf/measure/quantile_bounds.h"

#include <cmath>
#include <stdexcept>

#include <boost/math/distributions/binomial.hpp>

namespace torchperf {
namespace {

void check_quantile_and_confidence(double q, double confidence) {
  if (!(q > 0 && q < 1)) throw std::invalid_argument("quantile must be in (0,1)");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("confidence must be in (0,1)");
}

// The smallest j in [0, n] with P(B <= j) >= p (or > p when strict) for B ~ Binomial(n, q), n + 1
// when none: the CDF rises with j, so a binary search.
std::size_t binomial_rank(std::size_t n, double q, double p, bool strict = false) {
  const boost::math::binomial_distribution<double> b(static_cast<double>(n), q);
  std::size_t lo = 0, hi = n + 1;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const double cdf = boost::math::cdf(b, static_cast<double>(mid));
    if (strict ? cdf > p : cdf >= p)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace

// B, the number of samples below the true quantile Q, is Binomial(n, q). The k-th smallest
// sample x_(k) (1-based) is above Q when B < k: P(x_(k) >= Q) = P(B <= k - 1).
Interval quantile_confidence_interval_sorted(const std::vector<double>& sorted, double q,
                                             double confidence) {
  check_quantile_and_confidence(q, confidence);
  const std::size_t n = sorted.size();
  if (n == 0) return {std::nan(""), std::nan("")};
  const double tail = (1 - confidence) / 2;
  // Upper end: the smallest k with P(x_(k) >= Q) = P(B <= k - 1) >= 1 - tail.
  const std::size_t upper = binomial_rank(n, q, 1 - tail) + 1;
  // Lower end: the largest k with P(x_(k) <= Q) = 1 - P(B <= k - 1) >= 1 - tail, i.e. the
  // smallest j with P(B <= j) > tail is k; 0 means there is none.
  const std::size_t lower = binomial_rank(n, q, tail, true);
  Interval ci{std::nan(""), std::nan("")};
  if (lower >= 1 && lower <= n) ci.low = sorted[lower - 1];
  if (upper >= 1 && upper <= n) ci.high = sorted[upper - 1];
  return ci;
}

double quantile_upper_bound_sorted(const std::vector<double>& sorted, double q,
                                   double confidence) {
  check_quantile_and_confidence(q, confidence);
  const std::size_t k = binomial_rank(sorted.size(), q, confidence) + 1;
  return k <= sorted.size() ? sorted[k - 1] : std::nan("");
}

std::size_t samples_for_quantile_upper_bound(double q, double confidence) {
  check_quantile_and_confidence(q, confidence);
  // x_(n) bounds the quantile when P(B <= n - 1) = 1 - q^n >= confidence.
  return static_cast<std::size_t>(std::ceil(std::log(1 - confidence) / std::log(q) - 1e-9));
}

}  // namespace torchperf
