#include "torchperf/analysis/effects.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "torchperf/measure/ratio_estimate.h"
#include "torchperf/measure/statistics.h"

namespace torchperf {
namespace {

// The levels of every factor except the excluded ones, as one string: points with equal contexts
// differ only in the excluded factors.
std::string context_of(const Observation& o, std::size_t skip_a, std::size_t skip_b) {
  std::string context;
  for (std::size_t i = 0; i < o.levels.size(); ++i) {
    if (i == skip_a || i == skip_b) continue;
    context += o.levels[i];
    context += '\x1f';
  }
  return context;
}

struct LogScore {
  double value = 0, low = NAN, high = NAN;
};
using Cell = std::map<std::string, LogScore>;  // level (or "a\x1fb") -> log score

LogScore log_score(const Observation& o) {
  return {std::log(o.score), o.low > 0 ? std::log(o.low) : NAN, o.high > 0 ? std::log(o.high) : NAN};
}

// later / earlier, with the interval of the quotient from the two intervals.
LogRatio ratio_of(const LogScore& later, const LogScore& earlier) {
  return {later.value - earlier.value, later.low - earlier.high, later.high - earlier.low};
}

LogRatio difference(const LogRatio& a, const LogRatio& b) {
  return {a.value - b.value, a.low - b.high, a.high - b.low};
}

}  // namespace

bool EffectEstimate::has_interval() const { return std::isfinite(low) && std::isfinite(high); }

bool EffectEstimate::negligible() const {
  return has_interval() && low >= 1 / kNegligibleRatio && high <= kNegligibleRatio;
}

bool EffectEstimate::significant() const {
  const Verdict v = verdict_of(Interval{low, high});
  return v == Verdict::kFaster || v == Verdict::kSlower;
}

EffectEstimate estimate_from_log_ratios(const std::vector<LogRatio>& log_ratios) {
  EffectEstimate e;
  e.pairs = log_ratios.size();
  if (log_ratios.empty()) {
    e.ratio = e.low = e.high = NAN;
    return e;
  }
  const double n = static_cast<double>(log_ratios.size());
  double mean = 0;
  for (const auto& r : log_ratios) mean += r.value / n;
  e.ratio = std::exp(mean);
  double ss = 0;
  for (const auto& r : log_ratios) ss += (r.value - mean) * (r.value - mean);
  // Identical ratios carry no spread either (rounding leaves ss a hair above 0): a zero-width
  // interval would claim too much.
  const bool no_spread = ss <= 1e-20 * n * std::max(1.0, mean * mean);
  if (log_ratios.size() < 3 || no_spread) {
    // The span of the pairs, each with its measurement noise: covers both pairs when they
    // disagree, rather than averaging a disagreement into "nothing".
    double low = INFINITY, high = -INFINITY;
    for (const auto& r : log_ratios) {
      low = std::min(low, r.low);
      high = std::max(high, r.high);
    }
    const bool known = std::all_of(log_ratios.begin(), log_ratios.end(), [](const LogRatio& r) {
      return std::isfinite(r.low) && std::isfinite(r.high);
    });
    e.low = known ? std::exp(low) : NAN;
    e.high = known ? std::exp(high) : NAN;
    e.measurement_interval = known;
    return e;
  }
  const double se = std::sqrt(ss / (n - 1) / n);
  const double t = student_t_two_sided_quantile(0.95, n - 1);
  e.low = std::exp(mean - t * se);
  e.high = std::exp(mean + t * se);
  return e;
}

std::vector<KnobEffects> main_effects(const Design& design) {
  std::vector<KnobEffects> result;
  const std::size_t none = design.factors.size();
  for (std::size_t f = 0; f < design.factors.size(); ++f) {
    const Factor& factor = design.factors[f];
    if (factor.levels.size() < 2) continue;
    std::map<std::string, Cell> by_context;
    for (const auto& o : design.observations)
      if (o.score > 0 && std::isfinite(o.score))
        by_context[context_of(o, f, none)][o.levels[f]] = log_score(o);
    KnobEffects knob{factor.name, {}, 0};
    for (const auto& level : factor.levels) {
      if (level == factor.reference) continue;
      std::vector<LogRatio> diffs;
      for (const auto& [context, cell] : by_context) {
        const auto ref = cell.find(factor.reference), val = cell.find(level);
        if (ref != cell.end() && val != cell.end()) diffs.push_back(ratio_of(val->second, ref->second));
      }
      if (diffs.empty()) continue;
      MainEffect e{factor.name, level, factor.reference, estimate_from_log_ratios(diffs)};
      knob.strength = std::max(knob.strength, std::abs(std::log(e.estimate.ratio)));
      knob.effects.push_back(e);
    }
    if (knob.effects.empty()) continue;
    std::sort(knob.effects.begin(), knob.effects.end(), [](const auto& a, const auto& b) {
      return a.estimate.ratio > b.estimate.ratio;
    });
    result.push_back(knob);
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const auto& a, const auto& b) { return a.strength > b.strength; });
  return result;
}

std::vector<Interaction> interactions(const Design& design) {
  std::vector<Interaction> result;
  for (std::size_t fa = 0; fa < design.factors.size(); ++fa) {
    for (std::size_t fb = fa + 1; fb < design.factors.size(); ++fb) {
      const Factor& a = design.factors[fa];
      const Factor& b = design.factors[fb];
      if (a.levels.size() < 2 || b.levels.size() < 2) continue;
      std::map<std::string, Cell> by_context;
      for (const auto& o : design.observations)
        if (o.score > 0 && std::isfinite(o.score))
          by_context[context_of(o, fa, fb)][o.levels[fa] + '\x1f' + o.levels[fb]] = log_score(o);
      for (const auto& va : a.levels) {
        if (va == a.reference) continue;
        for (const auto& vb : b.levels) {
          if (vb == b.reference) continue;
          std::vector<LogRatio> inter, at_ref, at_val, b_at_ref, b_at_val;
          for (const auto& [context, cell] : by_context) {
            const auto get = [&](const std::string& x, const std::string& y) {
              return cell.find(x + '\x1f' + y);
            };
            const auto rr = get(a.reference, b.reference), ar = get(va, b.reference),
                       rv = get(a.reference, vb), av = get(va, vb);
            if (rr == cell.end() || ar == cell.end() || rv == cell.end() || av == cell.end())
              continue;
            at_ref.push_back(ratio_of(ar->second, rr->second));
            at_val.push_back(ratio_of(av->second, rv->second));
            b_at_ref.push_back(ratio_of(rv->second, rr->second));
            b_at_val.push_back(ratio_of(av->second, ar->second));
            inter.push_back(difference(at_val.back(), at_ref.back()));
          }
          if (inter.empty()) continue;
          result.push_back({a.name, va, a.reference, b.name, vb, b.reference,
                            estimate_from_log_ratios(inter), estimate_from_log_ratios(at_ref),
                            estimate_from_log_ratios(at_val), estimate_from_log_ratios(b_at_ref),
                            estimate_from_log_ratios(b_at_val)});
        }
      }
    }
  }
  // Significant ones first: a large ratio of ratios from one noisy quadruple says little.
  std::stable_sort(result.begin(), result.end(), [](const auto& x, const auto& y) {
    if (x.estimate.significant() != y.estimate.significant()) return x.estimate.significant();
    return std::abs(std::log(x.estimate.ratio)) > std::abs(std::log(y.estimate.ratio));
  });
  return result;
}

}  // namespace torchperf
