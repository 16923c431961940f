#include "torchperf/train/ladder.h"

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/train/training_session.h"

namespace torchperf {
namespace {

using testing::fixture;

TrainingContext tiny() {
  TrainingSpec spec;
  spec.model = fixture("tiny_cnn.pt");
  spec.data.image_size = 16;
  return TrainingContext::open(spec);
}

TEST(LadderTest, HeadToHeadOfAConfigurationWithItselfGivesARatioNearOneWithAnInterval) {
  const TrainingContext c = tiny();
  TrainingSession a(c, Configuration::parse("batch=4"));
  TrainingSession b(c, Configuration::parse("batch=4"));
  HeadToHeadOptions o;
  o.rounds = 3;
  o.steps = 2;
  const Speedup s = head_to_head(a, b, o);
  EXPECT_EQ(s.rounds.size(), 3u);
  EXPECT_LE(s.interval.low, s.ratio);
  EXPECT_GE(s.interval.high, s.ratio);
  EXPECT_GT(s.ratio, 0.3);
  EXPECT_LT(s.ratio, 3.0);
}

TEST(LadderTest, TheClimbStartsFromTheLoopAsGivenAndKeepsOnlyWinners) {
  const TrainingContext c = tiny();
  LadderOptions o;
  o.compare.rounds = 3;
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
  EXPECT_FALSE(r.stop_reason.empty());
}

}  // namespace
}  // namespace torchperf
