#include "torchperf/analysis/effects.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

namespace torchperf {
namespace {

// Three knobs with known multiplicative effects, an A x B interaction of 1.25 and 1% noise:
// A: a1 = 1.5x; B: b1 = 0.8x; C: c1 = 1.0x, c2 = 1.2x; with a1 and b1 together, another 1.25x.
Design synthetic_design(std::uint32_t seed = 7) {
  Design d;
  d.factors = {{"A", "a0", {"a0", "a1"}}, {"B", "b0", {"b0", "b1"}}, {"C", "c0", {"c0", "c1", "c2"}}};
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  const std::map<std::string, double> factor = {{"a0", 1}, {"a1", 1.5}, {"b0", 1}, {"b1", 0.8},
                                                {"c0", 1}, {"c1", 1.0}, {"c2", 1.2}};
  for (const auto& a : d.factors[0].levels)
    for (const auto& b : d.factors[1].levels)
      for (const auto& c : d.factors[2].levels) {
        double score = 100 * factor.at(a) * factor.at(b) * factor.at(c);
        if (a == "a1" && b == "b1") score *= 1.25;
        d.observations.push_back({{a, b, c}, score * std::exp(noise(rng))});
      }
  return d;
}

const MainEffect& effect(const std::vector<KnobEffects>& all, const std::string& knob,
                         const std::string& value) {
  for (const auto& k : all)
    for (const auto& e : k.effects)
      if (k.knob == knob && e.value == value) return e;
  throw std::runtime_error("no effect " + knob + "=" + value);
}

const Interaction& interaction(const std::vector<Interaction>& all, const std::string& a,
                               const std::string& b) {
  for (const auto& i : all)
    if (i.value_a == a && i.value_b == b) return i;
  throw std::runtime_error("no interaction " + a + " x " + b);
}

TEST(EffectsTest, MainEffectsRecoverTheKnownFactorsAveragedOverTheOtherKnobs) {
  const auto effects = main_effects(synthetic_design());
  // A's effect is 1.5 where B=b0 and 1.5*1.25 where B=b1: the geometric mean over its 6 pairs.
  const MainEffect& a1 = effect(effects, "A", "a1");
  EXPECT_NEAR(a1.estimate.ratio, 1.5 * std::sqrt(1.25), 0.03);
  EXPECT_EQ(a1.estimate.pairs, 6u);
  EXPECT_TRUE(a1.estimate.significant());
  EXPECT_NEAR(effect(effects, "B", "b1").estimate.ratio, 0.8 * std::sqrt(1.25), 0.03);
  EXPECT_NEAR(effect(effects, "C", "c2").estimate.ratio, 1.2, 0.03);
  EXPECT_EQ(effect(effects, "C", "c2").estimate.pairs, 4u);
  const MainEffect& c1 = effect(effects, "C", "c1");
  EXPECT_NEAR(c1.estimate.ratio, 1.0, 0.03);
  EXPECT_FALSE(c1.estimate.significant()) << c1.estimate.low << " " << c1.estimate.high;
}

TEST(EffectsTest, KnobsAreRankedByTheirStrongestEffect) {
  const auto effects = main_effects(synthetic_design());
  ASSERT_EQ(effects.size(), 3u);
  EXPECT_EQ(effects[0].knob, "A");
  EXPECT_EQ(effects[1].knob, "C");  // 1.2x beats B's 0.89x
  EXPECT_EQ(effects[2].knob, "B");
}

TEST(EffectsTest, TheInteractionIsRecoveredAsARatioOfRatios) {
  const auto all = interactions(synthetic_design());
  const Interaction& ab = interaction(all, "a1", "b1");
  EXPECT_NEAR(ab.estimate.ratio, 1.25, 0.04);
  EXPECT_EQ(ab.estimate.pairs, 3u);  // one quadruple per level of C
  EXPECT_TRUE(ab.estimate.significant());
  EXPECT_NEAR(ab.a_at_reference_b.ratio, 1.5, 0.04);
  EXPECT_NEAR(ab.a_at_value_b.ratio, 1.5 * 1.25, 0.05);
  EXPECT_NEAR(ab.b_at_reference_a.ratio, 0.8, 0.03);
  EXPECT_NEAR(ab.b_at_value_a.ratio, 0.8 * 1.25, 0.04);
  // The one real interaction comes first; A x C is not one.
  EXPECT_EQ(all.front().value_a, "a1");
  EXPECT_EQ(all.front().value_b, "b1");
  const Interaction& ac = interaction(all, "a1", "c2");
  EXPECT_NEAR(ac.estimate.ratio, 1.0, 0.04);
  EXPECT_FALSE(ac.estimate.significant());
}

TEST(EffectsTest, AnUnbalancedDesignUsesTheCompletePairsThatRemain) {
  Design d = synthetic_design();
  // Failed points are missing from a real run: drop two, one of them in A's reference corner.
  d.observations.erase(d.observations.begin() + 1);  // a0 b0 c1
  d.observations.erase(d.observations.begin() + 7);  // a1 b0 c2 (index shifted by one)
  const auto effects = main_effects(d);
  const MainEffect& a1 = effect(effects, "A", "a1");
  EXPECT_EQ(a1.estimate.pairs, 4u);
  // The remaining pairs hold one context with B=b0 and three with B=b1, and are weighted so.
  EXPECT_NEAR(a1.estimate.ratio, 1.5 * std::pow(1.25, 0.75), 0.04);
  const auto all = interactions(d);  // kept: `ab` refers into it
  const Interaction& ab = interaction(all, "a1", "b1");
  EXPECT_EQ(ab.estimate.pairs, 1u);  // only C=c0 keeps all four corners
  EXPECT_NEAR(ab.estimate.ratio, 1.25, 0.05);
  EXPECT_FALSE(ab.estimate.has_interval());  // one quadruple has no spread
}

TEST(EffectsTest, FailedOrNonPositiveScoresTakeNoPart) {
  Design d = synthetic_design();
  d.observations[0].score = 0;
  d.observations[2].score = NAN;
  const auto effects = main_effects(d);
  // Observations 0 (a0 b0 c0) and 2 (a0 b0 c2) lose A's pairs in those two contexts.
  EXPECT_EQ(effect(effects, "A", "a1").estimate.pairs, 4u);
}

TEST(EffectsTest, ALevelWithNoPairIsLeftOutRatherThanGuessed) {
  Design d;
  d.factors = {{"A", "a0", {"a0", "a1"}}, {"B", "b0", {"b0", "b1"}}};
  d.observations = {{{"a0", "b0"}, 10}, {{"a1", "b1"}, 20}};  // differ in both: no pair
  EXPECT_TRUE(main_effects(d).empty());
  EXPECT_TRUE(interactions(d).empty());
}

TEST(EffectsTest, FromThreePairsTheIntervalFollowsStudentsT) {
  const EffectEstimate e =
      estimate_from_log_ratios({{std::log(1.1)}, {std::log(1.2)}, {std::log(1.3)}});
  EXPECT_NEAR(e.ratio, std::cbrt(1.1 * 1.2 * 1.3), 1e-9);
  // t(0.975, 2) = 4.303 times the standard error of the mean log.
  const double a = std::log(1.1), b = std::log(1.2), c = std::log(1.3), m = (a + b + c) / 3;
  const double se = std::sqrt(((a - m) * (a - m) + (b - m) * (b - m) + (c - m) * (c - m)) / 2 / 3);
  EXPECT_NEAR(std::log(e.high) - m, 4.303 * se, 0.01);
  EXPECT_FALSE(e.measurement_interval);
}

TEST(EffectsTest, OneOrTwoPairsSpanTheirOwnMeasurementIntervals) {
  // One pair: 1.5x, its points measured within +-1%: the interval is the quotient's.
  const EffectEstimate one = estimate_from_log_ratios(
      {{std::log(1.5), std::log(1.5 * 0.99 / 1.01), std::log(1.5 * 1.01 / 0.99)}});
  EXPECT_TRUE(one.measurement_interval);
  EXPECT_NEAR(one.low, 1.5 * 0.99 / 1.01, 1e-9);
  EXPECT_TRUE(one.significant());
  // Two pairs that disagree (0.5x and 2x) average to 1x but must not read as "did nothing".
  const EffectEstimate two = estimate_from_log_ratios(
      {{std::log(0.5), std::log(0.49), std::log(0.51)}, {std::log(2.0), std::log(1.96), std::log(2.04)}});
  EXPECT_NEAR(two.ratio, 1.0, 1e-9);
  EXPECT_NEAR(two.low, 0.49, 1e-9);
  EXPECT_NEAR(two.high, 2.04, 1e-9);
  EXPECT_FALSE(two.significant());
  // Without measurement intervals there is none.
  EXPECT_FALSE(estimate_from_log_ratios({{std::log(1.5)}}).has_interval());
}

}  // namespace
}  // namespace torchperf
