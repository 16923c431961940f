#include "torchperf/sweep/objective.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {

TEST(ObjectiveTest, ParsesEachObjectiveAndRejectsOthers) {
  EXPECT_EQ(Objective::parse("throughput").kind, ObjectiveKind::kThroughput);
  EXPECT_EQ(Objective::parse("latency").kind, ObjectiveKind::kLatencyP50);
  EXPECT_EQ(Objective::parse("latency-p99").to_string(), "latency-p99");
  EXPECT_THROW(Objective::parse("speed"), UsageError);
}

TEST(ObjectiveTest, TheScoreIsHigherForBetterPointsWhateverTheObjective) {
  PointMetrics fast, slow;
  fast.throughput = 200, fast.latency_p50_ms = 5, fast.latency_p99_ms = 9;
  slow.throughput = 100, slow.latency_p50_ms = 10, slow.latency_p99_ms = 20;
  for (const char* name : {"throughput", "latency-p50", "latency-p99"}) {
    const Objective o = Objective::parse(name);
    EXPECT_GT(objective_score(o, fast), objective_score(o, slow)) << name;
  }
  EXPECT_DOUBLE_EQ(objective_value(Objective::parse("latency"), fast), 5);
}

TEST(AccuracyGuardTest, ParsesBoundsWithPercentagesAndNone) {
  const AccuracyGuard g = AccuracyGuard::parse("cosine>=0.9999, top1>=98%,max_abs<=1e-3");
  ASSERT_EQ(g.bounds.size(), 3u);
  EXPECT_DOUBLE_EQ(g.bounds[1].threshold, 0.98);
  EXPECT_FALSE(g.bounds[2].at_least);
  EXPECT_EQ(g.to_string(), "cosine>=0.9999,top1>=0.98,max_abs<=0.001");
  EXPECT_TRUE(AccuracyGuard::parse("none").bounds.empty());
}

TEST(AccuracyGuardTest, RejectsMalformedBoundsNamingThem) {
  for (const char* bad : {"cosine>0.9", "cosine>=abc", "speed>=1", "", "top1=>3"}) {
    try {
      AccuracyGuard::parse(bad);
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--accuracy"), std::string::npos) << e.what();
    }
  }
}

TEST(AccuracyGuardTest, TheDefaultPassesAnExactOutputAndFailsADriftedOne) {
  const AccuracyGuard g = AccuracyGuard::default_guard();
  PointMetrics m;
  m.cosine = 1, m.top1 = 1.0;
  EXPECT_FALSE(g.check(m));
  m.cosine = 0.998;
  ASSERT_TRUE(g.check(m));
  EXPECT_NE(g.check(m)->find("cosine 0.998 < 0.999"), std::string::npos) << *g.check(m);
  m.cosine = 1, m.top1 = 0.875;
  EXPECT_NE(g.check(m)->find("top1"), std::string::npos);
}

TEST(AccuracyGuardTest, TheDefaultFailsAnOutputScaledWhereTheCosineCannotSeeIt) {
  // Issue 63: a single-number output scaled 4x has cosine 1 with its reference.
  PointMetrics m;
  m.cosine = 1, m.max_rel_error = 3.0;
  const auto why = AccuracyGuard::default_guard().check(m);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("max_rel 3 > 0.1"), std::string::npos) << *why;
  m.max_rel_error = 0.014;  // int8-dynamic on builtin:mlp
  EXPECT_FALSE(AccuracyGuard::default_guard().check(m));
}

TEST(AccuracyGuardTest, TopOneIsCheckedOnlyWhereTheOutputHasOne) {
  PointMetrics m;
  m.cosine = 0.9999;  // no top1: not logits
  EXPECT_FALSE(AccuracyGuard::default_guard().check(m));
}

TEST(AccuracyGuardTest, InvalidAndIncomparableOutputsNeverPass) {
  PointMetrics m;
  m.valid = false;
  m.invalid_reason = "output has 3 NaN/Inf values";
  EXPECT_EQ(*AccuracyGuard::parse("none").check(m), "output has 3 NaN/Inf values");
  PointMetrics n;
  n.comparable = false;
  EXPECT_TRUE(AccuracyGuard::default_guard().check(n));
}

}  // namespace torchperf
