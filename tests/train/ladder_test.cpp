#include "torchperf/train/ladder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "torchperf/train/training_session.h"

namespace torchperf {
namespace {

using testing::fixture;

TrainingContext tiny_cnn_16px() {
  TrainingSpec spec;
  spec.model = fixture("tiny_cnn.pt");
  spec.data.image_size = 16;
  return TrainingContext::open(spec);
}

HeadToHeadOptions fixed_rounds(std::size_t rounds) {
  HeadToHeadOptions o;
  o.rounds = rounds;
  o.max_rounds = rounds;
  return o;
}

TEST(LadderTest, ComparisonAlternatesWhoGoesFirstAndTakesTheGeometricMeanOfTheRatios) {
  std::string order;
  const std::vector<double> b_values = {200, 100, 200, 100};  // ratios 2, 1, 2, 1 over A = 100
  std::size_t b_calls = 0;
  const Speedup s = compare_throughputs(
      [&] { order += "A"; return 100.0; },
      [&] { order += "B"; return b_values[b_calls++]; }, fixed_rounds(4), [&] { order += "|"; });
  EXPECT_EQ(order, "A|B|B|A|A|B|B|A|");
  ASSERT_EQ(s.rounds, (std::vector<double>{2, 1, 2, 1}));
  EXPECT_NEAR(s.ratio, std::sqrt(2.0), 1e-12);
  // Log ratios ln2, 0, ln2, 0: mean ln2/2, standard error (ln2/sqrt(3))/2, 3 degrees of freedom.
  const double half =
      student_t_two_sided_quantile(0.95, 3) * (std::log(2.0) / std::sqrt(3.0)) / 2.0;
  EXPECT_NEAR(s.interval.low, std::exp(std::log(2.0) / 2 - half), 1e-9);
  EXPECT_NEAR(s.interval.high, std::exp(std::log(2.0) / 2 + half), 1e-9);
  EXPECT_FALSE(s.wins(0.02)) << "an interval reaching below 1 is not a win";
}

TEST(LadderTest, AConsistentGainWinsAndTooFewRoundsHaveNoInterval) {
  const Speedup steady = compare_throughputs([] { return 100.0; }, [] { return 110.0; }, fixed_rounds(4));
  EXPECT_NEAR(steady.ratio, 1.1, 1e-12);
  EXPECT_TRUE(steady.wins(0.02));
  EXPECT_FALSE(steady.wins(0.2)) << "10% is below a 20% minimum gain";
  const Speedup once = compare_throughputs([] { return 100.0; }, [] { return 110.0; }, fixed_rounds(3));
  EXPECT_TRUE(std::isnan(once.interval.low));
  EXPECT_FALSE(once.wins(0.02));
}

TEST(LadderTest, AnUndecidedComparisonGoesOnTwoRoundsAtATimeUpToItsMaximum) {
  // Ratios alternate 1.5 and 0.9: the interval straddles 1 for a long time.
  HeadToHeadOptions o;
  o.rounds = 4;
  o.max_rounds = 8;
  std::size_t b_calls = 0;
  const Speedup noisy = compare_throughputs([] { return 100.0; },
                                            [&] { return (b_calls++ % 2 == 0) ? 150.0 : 90.0; }, o);
  EXPECT_EQ(noisy.rounds.size(), 8u);
  // A steady 10% gain is decided after the first four rounds: no more are run.
  const Speedup steady = compare_throughputs([] { return 100.0; }, [] { return 110.0; }, o);
  EXPECT_EQ(steady.rounds.size(), 4u);
  // So is a steady loss.
  const Speedup loss = compare_throughputs([] { return 100.0; }, [] { return 90.0; }, o);
  EXPECT_EQ(loss.rounds.size(), 4u);
  EXPECT_TRUE(loss.decided(o.min_gain));
  EXPECT_FALSE(loss.wins(o.min_gain));
}

TEST(LadderTest, HeadToHeadRunsTimedBlocksOfBothSessions) {
  const TrainingContext c = tiny_cnn_16px();
  TrainingSession a(c, Configuration::parse("batch=4"));
  TrainingSession b(c, Configuration::parse("batch=4"));
  HeadToHeadOptions o;
  o.rounds = 3;
  o.max_rounds = 3;
  o.steps = 2;
  const Speedup s = head_to_head(a, b, o);
  ASSERT_EQ(s.rounds.size(), 3u);
  for (const double r : s.rounds) EXPECT_TRUE(std::isfinite(r) && r > 0) << r;
  // Each block: one settling step and two timed ones, per session and round.
  EXPECT_EQ(a.steps_done(), 9u);
  EXPECT_EQ(b.steps_done(), 9u);
}

TEST(LadderTest, TheClimbStartsFromTheLoopAsGivenAndKeepsOnlyWinners) {
  const TrainingContext c = tiny_cnn_16px();
  LadderOptions o;
  o.compare.rounds = 3;
  o.compare.max_rounds = 3;
  o.compare.steps = 2;
  o.warmup_steps = 1;
  o.breakdown_steps = 2;
  o.max_rungs = 2;
  std::vector<std::string> seen;
  LadderEvents events;
  events.attempt = [&](const Attempt& a) { seen.push_back(a.change); };
  const LadderResult r = climb(c, Configuration::parse("batch=4"), o, events);
  ASSERT_FALSE(r.rungs.empty());
  EXPECT_EQ(r.rungs.front().step, 0u);
  EXPECT_EQ(r.rungs.front().cumulative, 1.0);
  EXPECT_EQ(seen.size(), r.attempts.size());
  std::size_t kept = 0;
  for (const auto& a : r.attempts) kept += a.kept;
  EXPECT_EQ(kept + 1, r.rungs.size());
  for (std::size_t i = 1; i < r.rungs.size(); ++i) {
    EXPECT_GT(r.rungs[i].speedup.interval.low, 1.0);
    EXPECT_FALSE(r.rungs[i].changes_training);  // not allowed without --allow-semantic-changes
  }
  for (const auto& a : r.attempts)
    EXPECT_TRUE(a.change.rfind("batch=", 0) != 0 && a.change.rfind("amp=", 0) != 0)
        << a.change << " changes training and was tried without --allow-semantic-changes";
  EXPECT_TRUE(r.stop_reason == "no advised change won head to head" ||
              r.stop_reason == "reached --max-rungs")
      << r.stop_reason;
}

}  // namespace
}  // namespace torchperf
