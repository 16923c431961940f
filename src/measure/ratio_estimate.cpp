#include "torchperf/measure/ratio_estimate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace torchperf {

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kIndistinguishable:
      return "indistinguishable";
    case Verdict::kUndetermined:
      return "undetermined";
  }
  return "undetermined";
}

Verdict verdict_from_string(const std::string& name) {
  for (Verdict v :
       {Verdict::kFaster, Verdict::kSlower, Verdict::kIndistinguishable, Verdict::kUndetermined})
    if (to_string(v) == name) return v;
  throw std::invalid_argument("unknown verdict '" + name + "'");
}

RatioEstimate estimate_ratio(const std::vector<double>& ratios, double confidence) {
  RatioEstimate e;
  e.rounds = ratios.size();
  e.interval = {std::nan(""), std::nan("")};
  e.relative_half_width = std::nan("");
  if (ratios.empty()) {
    e.ratio = e.median = e.min = e.max = std::nan("");
    return e;
  }
  std::vector<double> logs;
  logs.reserve(ratios.size());
  for (double r : ratios) {
    if (!(r > 0) || !std::isfinite(r))
      throw std::invalid_argument("a ratio must be positive and finite, got " + std::to_string(r));
    logs.push_back(std::log(r));
  }
  const double n = static_cast<double>(logs.size());
  double mean = 0;
  for (double l : logs) mean += l;
  mean /= n;
  e.ratio = std::exp(mean);
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  e.median = quantile_sorted(sorted, 0.5);
  e.min = sorted.front();
  e.max = sorted.back();
  if (ratios.size() < kMinRatioRounds) return e;
  double ss = 0;
  for (double l : logs) ss += (l - mean) * (l - mean);
  const double half =
      student_t_two_sided_quantile(confidence, n - 1) * std::sqrt(ss / (n - 1) / n);
  e.interval = {std::exp(mean - half), std::exp(mean + half)};
  e.relative_half_width = std::max(e.ratio - e.interval.low, e.interval.high - e.ratio) / e.ratio;
  return e;
}

RatioEstimate scaled(RatioEstimate e, double factor) {
  if (!(factor > 0)) throw std::invalid_argument("a scale factor must be positive");
  for (double* v : {&e.ratio, &e.interval.low, &e.interval.high, &e.median, &e.min, &e.max})
    *v *= factor;
  return e;
}

Verdict verdict_of(const Interval& interval) {
  if (!std::isfinite(interval.low) || !std::isfinite(interval.high)) return Verdict::kUndetermined;
  if (interval.low > 1) return Verdict::kFaster;
  if (interval.high < 1) return Verdict::kSlower;
  return Verdict::kIndistinguishable;
}

Verdict verdict_of(const RatioEstimate& e) { return verdict_of(e.interval); }

}  // namespace torchperf
