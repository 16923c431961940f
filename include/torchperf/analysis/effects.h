// Effect estimators over a factorial (possibly incomplete) set of measurements: the main effect of
// each knob value and the two-way interactions, each a geometric mean of exact pairs (quadruples)
// of points that differ only in the knobs concerned, with a Student t interval on the logs.
// Torch-free and independent of the journal, so that synthetic designs can test it.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace torchperf {

// An effect within this factor of 1 either way, with its whole interval inside, did nothing.
inline constexpr double kNegligibleRatio = 1.03;

// A multiplicative effect: ratio > 1 means better on the score, with a 95% interval. From three
// pairs on, the interval is Student's t on the pairs' log ratios: it covers how the effect varies
// from one context to another. With one or two pairs there is no such spread to estimate; the
// interval is then the span of the pairs' ratios, each widened by its two points' own measurement
// intervals (measurement_interval), and NaN where those are unknown.
struct EffectEstimate {
  double ratio = 0, low = 0, high = 0;
  std::size_t pairs = 0;
  bool measurement_interval = false;
  bool has_interval() const;
  // The interval excludes 1.
  bool significant() const;
  // The whole interval within kNegligibleRatio of 1: whatever it is, it is too small to matter.
  bool negligible() const;
};

// One pair's log ratio, with the log interval from its two points' measurement intervals
// (NaN ends when unknown).
struct LogRatio {
  double value = 0, low = NAN, high = NAN;
};

// Geometric mean of the ratios with its interval, as EffectEstimate says.
EffectEstimate estimate_from_log_ratios(const std::vector<LogRatio>& log_ratios);

// One measured point: a level per factor (same order as Design::factors) and its score (> 0,
// higher is better).
struct Observation {
  std::vector<std::string> levels;
  double score = 0;
  double low = NAN, high = NAN;  // the score's own 95% interval, when measured
};

struct Factor {
  std::string name;
  std::string reference;            // the level effects are measured from (the origin's)
  std::vector<std::string> levels;  // every level seen, reference first
};

struct Design {
  std::vector<Factor> factors;
  std::vector<Observation> observations;
};

struct MainEffect {
  std::string knob, value, reference;  // value against reference, everything else equal
  EffectEstimate estimate;
};

struct KnobEffects {
  std::string knob;
  std::vector<MainEffect> effects;  // one per non-reference level, best first
  double strength = 0;              // the largest |log ratio| among them: the ranking key
};

// Effect of knob A's value against its reference, and how it changes when knob B moves from its
// reference to value_b: interaction = effect(A | B=value_b) / effect(A | B=reference).
struct Interaction {
  std::string knob_a, value_a, reference_a, knob_b, value_b, reference_b;
  EffectEstimate estimate;   // ratio of ratios over the quadruples
  EffectEstimate a_at_reference_b;  // A's effect where B is at its reference (same quadruples)
  EffectEstimate a_at_value_b;      // A's effect where B is value_b
  EffectEstimate b_at_reference_a;  // and the same the other way round (the ratio of ratios is
  EffectEstimate b_at_value_a;      // symmetric: B's effect changes by as much with A)
};

// Knobs ranked by strength, strongest first; factors with one level are left out, and so are
// levels with no pair.
std::vector<KnobEffects> main_effects(const Design& design);

// Every pair of factors and non-reference levels that has at least one complete quadruple:
// significant ones first, then by |log interaction|.
std::vector<Interaction> interactions(const Design& design);

}  // namespace torchperf
