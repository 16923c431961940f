#include "torchperf/train/ladder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
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
  // With the budget spent (may_extend says no), the undecided one keeps its first rounds.
  o.may_extend = [] { return false; };
  b_calls = 0;
  const Speedup spent = compare_throughputs([] { return 100.0; },
                                            [&] { return (b_calls++ % 2 == 0) ? 150.0 : 90.0; }, o);
  EXPECT_EQ(spent.rounds.size(), 4u);
  EXPECT_FALSE(spent.decided(o.min_gain));
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
  EXPECT_TRUE(r.stop_reason ==
                  "every advised change was tried at this rung and none won head to head" ||
              r.stop_reason == "reached --max-rungs")
      << r.stop_reason;
}

// The climb with the head-to-head's verdict scripted per change (the sessions, breakdowns and
// advice are real): a quick ladder over the tiny CNN, batch 4, data made in the training thread.
LadderOptions scripted(std::function<double(const std::string& change)> ratio_of) {
  LadderOptions o;
  o.warmup_steps = 1;
  o.breakdown_steps = 2;
  o.max_rungs = 3;
  o.verdict = [ratio_of](const Configuration& from, const Configuration& to) {
    std::string change;
    for (const auto& [knob, value] : to.values())
      if (from.get(knob) != value) change += (change.empty() ? "" : ",") + knob + "=" + value;
    Speedup s;
    s.ratio = ratio_of(change);
    s.interval = {s.ratio * 0.97, s.ratio * 1.03};
    s.rounds = {s.ratio, s.ratio, s.ratio, s.ratio};
    return s;
  };
  return o;
}

// A step clock where the data wait takes 8 ms and every other phase 1 ms: a step reads the clock
// at its start, at the end of each of its six phases, and at its end.
class DataBoundClock final : public TimeSource {
 public:
  Clock::time_point now() override {
    const std::size_t call = calls_++ % 8;
    if (call == 1) elapsed_ += std::chrono::milliseconds(8);
    else if (call >= 2 && call <= 6) elapsed_ += std::chrono::milliseconds(1);
    return Clock::time_point(elapsed_);
  }

 private:
  std::size_t calls_ = 0;
  Nanoseconds elapsed_{0};
};

// The tiny CNN with that clock: its breakdowns call for loader threads, 8-bit transfer and (a
// change of what is learned) a larger batch, on any machine.
TrainingContext data_bound_tiny_cnn() {
  TrainingContext c = tiny_cnn_16px();
  c.clock = std::make_shared<DataBoundClock>();
  return c;
}

TEST(LadderTest, AChangeThatLosesIsRecordedAndTheNextAdvisedChangeIsTried) {
  const TrainingContext c = data_bound_tiny_cnn();
  const LadderResult lost = climb(c, Configuration::parse("batch=4"),
                                  scripted([](const std::string&) { return 0.9; }));
  ASSERT_GE(lost.attempts.size(), 2u) << "the data wait calls for loader threads and uint8";
  for (const auto& a : lost.attempts) EXPECT_FALSE(a.kept) << a.change;
  EXPECT_EQ(lost.rungs.size(), 1u);
  EXPECT_EQ(lost.stop_reason,
            "every advised change was tried at this rung and none won head to head");
  // The same climb where the last change tried wins: it is kept after the others lost.
  const std::string last = lost.attempts.back().change;
  const LadderResult won = climb(c, Configuration::parse("batch=4"), scripted([&](const std::string& ch) {
    return ch == last ? 1.3 : 0.9;
  }));
  ASSERT_GE(won.rungs.size(), 2u);
  EXPECT_EQ(won.rungs[1].change, last);
  EXPECT_NEAR(won.rungs[1].cumulative, 1.3, 1e-9);
  EXPECT_FALSE(won.attempts.front().kept);
}

TEST(LadderTest, AChangeThatRunsOutOfMemoryIsRecordedAsFailedAndTheClimbGoesOn) {
  const TrainingContext c = data_bound_tiny_cnn();
  LadderOptions o = scripted([](const std::string&) { return 1.3; });
  const auto scripted_verdict = o.verdict;
  std::string failed;
  o.verdict = [&](const Configuration& from, const Configuration& to) {
    if (failed.empty()) {
      failed = to.to_string();
      throw ResourceLimit("training side b: out of memory: the step reached 900 MiB resident, "
                          "over --memory-cap 512 MiB");
    }
    return scripted_verdict(from, to);
  };
  const LadderResult r = climb(c, Configuration::parse("batch=4"), o);
  ASSERT_GE(r.attempts.size(), 2u);
  EXPECT_FALSE(r.attempts.front().kept);
  EXPECT_NE(r.attempts.front().failure.find("over --memory-cap 512 MiB"), std::string::npos);
  EXPECT_EQ(r.attempts.front().speedup.ratio, 0);
  EXPECT_TRUE(r.attempts[1].failure.empty());
  EXPECT_TRUE(r.attempts[1].kept);  // the next advised change is tried, and wins
}

TEST(LadderTest, AChangeOverTheMemoryIsTriedAgainWithItsBlocksCheckpointedWithoutLeave) {
  TrainingContext c = data_bound_tiny_cnn();
  c.traits.python_definition = true;  // the step can run in Python, where checkpointing is
  LadderOptions o = scripted([](const std::string&) { return 0.9; });
  const auto scripted_verdict = o.verdict;
  o.verdict = [&](const Configuration& from, const Configuration& to) {
    if (to.get("checkpoint") != "blocks")
      throw ResourceLimit("training side b: out of memory: the step reached 900 MiB resident, "
                          "over --memory-cap 512 MiB");
    return scripted_verdict(from, to);
  };
  ASSERT_FALSE(o.allow_semantic_changes);
  const LadderResult r = climb(c, Configuration::parse("batch=4"), o);
  ASSERT_GE(r.attempts.size(), 2u);
  EXPECT_TRUE(r.attempts[0].out_of_memory) << r.attempts[0].failure;
  // The same change, the same learning, less memory: tried at once, not held back.
  EXPECT_EQ(r.attempts[1].change, r.attempts[0].change + ",checkpoint=blocks,step=eager");
  EXPECT_TRUE(r.attempts[1].failure.empty()) << r.attempts[1].failure;
  EXPECT_FALSE(r.attempts[1].changes_training);
  EXPECT_NEAR(r.attempts[1].speedup.ratio, 0.9, 1e-9);
  // A model that cannot run in Python is not: the next advised change follows the failure.
  c.traits.python_definition = false;
  const LadderResult script_only = climb(c, Configuration::parse("batch=4"), o);
  for (const auto& a : script_only.attempts)
    EXPECT_EQ(a.change.find("checkpoint"), std::string::npos) << a.change;
}

TEST(LadderTest, LoaderThreadsAreTriedUpwardWhileEachGainsMoreThanTheLast) {
  TrainingContext c = data_bound_tiny_cnn();
  c.traits.usable_cores = 8;  // sizes 1, 2, 4, 8
  std::vector<std::string> tried;
  const LadderResult r = climb(c, Configuration::parse("batch=4"), scripted([&](const std::string& ch) {
    if (ch.rfind("workers=", 0) == 0) tried.push_back(ch);
    if (ch == "workers=1") return 0.90;
    if (ch == "workers=2") return 0.95;  // gains on 1: the next size is tried
    if (ch == "workers=4") return 0.93;  // gains less than 2: 8 is not tried
    return 0.9;
  }));
  EXPECT_EQ(tried, (std::vector<std::string>{"workers=1", "workers=2", "workers=4"}));
  // A size that wins is kept, and the next rung goes on from it.
  tried.clear();
  const LadderResult kept = climb(c, Configuration::parse("batch=4"), scripted([&](const std::string& ch) {
    if (ch.rfind("workers=", 0) == 0) tried.push_back(ch);
    return ch == "workers=2" ? 1.2 : 0.9;
  }));
  ASSERT_GE(kept.rungs.size(), 2u);
  EXPECT_EQ(kept.rungs[1].change, "workers=2");
  ASSERT_GE(tried.size(), 2u);
  EXPECT_EQ(tried[0], "workers=1");
  EXPECT_EQ(tried[1], "workers=2");
}

TEST(LadderTest, ChangesOfWhatIsLearnedAreHeldBackWithAnEstimateUntilAllowed) {
  const TrainingContext c = data_bound_tiny_cnn();
  const auto lose = [](const std::string&) { return 0.9; };
  const LadderResult held = climb(c, Configuration::parse("batch=4"), scripted(lose));
  for (const auto& a : held.attempts) EXPECT_FALSE(a.changes_training) << a.change;
  ASSERT_FALSE(held.held_back.empty()) << "compute is 23% of the step: a larger batch is advised";
  EXPECT_NE(held.held_back.front().find("changes what is learned"), std::string::npos);
  EXPECT_NE(held.held_back.front().find("if it vanished"), std::string::npos);
  LadderOptions allowed = scripted(lose);
  allowed.allow_semantic_changes = true;
  const LadderResult tried = climb(c, Configuration::parse("batch=4"), allowed);
  bool semantic = false;
  for (const auto& a : tried.attempts) semantic = semantic || a.changes_training;
  EXPECT_TRUE(semantic);
  EXPECT_TRUE(tried.held_back.empty());
}

TEST(LadderTest, ChangesTooSmallToTellApartAreTriedTogether) {
  const TrainingContext c = data_bound_tiny_cnn();
  // Each change alone: +1%, its interval (0.98-1.04) unable to tell; two or more together: +10%.
  const LadderResult r = climb(c, Configuration::parse("batch=4"), scripted([](const std::string& ch) {
    return std::count(ch.begin(), ch.end(), ',') > 0 ? 1.10 : 1.01;
  }));
  ASSERT_GE(r.rungs.size(), 2u);
  EXPECT_EQ(r.rungs[1].rule, "together");
  // One loader-thread count at most (the one that gained more), with the other changes.
  const Configuration& top = r.rungs[1].configuration;
  EXPECT_TRUE(top.get("workers").has_value());
  EXPECT_EQ(top.get("transfer").value_or(""), "uint8");
  for (const auto& a : r.attempts) {
    if (a.rule == "together") {
      EXPECT_TRUE(a.kept);
    }
  }
}

TEST(LadderTest, TheBudgetStopsTheClimbBeforeTheNextChange) {
  const TrainingContext c = tiny_cnn_16px();
  LadderOptions o = scripted([](const std::string&) { return 0.9; });
  o.budget_s = 1e-9;
  const LadderResult r = climb(c, Configuration::parse("batch=4"), o);
  EXPECT_TRUE(r.attempts.empty());
  EXPECT_EQ(r.stop_reason.rfind("reached --budget", 0), 0u) << r.stop_reason;
}

// A clock 5 s later at every reading.
class FiveSecondsATick final : public TimeSource {
 public:
  Clock::time_point now() override { return Clock::time_point(std::chrono::seconds(5 * calls_++)); }

 private:
  long calls_ = 0;
};

TEST(LadderTest, UnderABudgetAChangeWhosePriceDoesNotFitIsHeldBackNotStarted) {
  // The loop as given took 15 s on this clock, its breakdown 5 s of them: a comparison is
  // priced at 15 s, and a kept change's breakdown at 5 more; at the first change 20 s of the 30
  // are spent.
  const TrainingContext c = data_bound_tiny_cnn();
  LadderOptions o = scripted([](const std::string&) { return 1.5; });
  o.budget_s = 30;
  FiveSecondsATick time;
  const LadderResult r = climb(c, Configuration::parse("batch=4"), o, {}, time);
  EXPECT_TRUE(r.attempts.empty());
  ASSERT_FALSE(r.held_back.empty());
  bool priced = false;
  for (const auto& line : r.held_back)
    priced |= line.find("not tried; it needs ~20 s (a comparison and, if kept, its breakdown), "
                        "10 s of --budget were left") != std::string::npos;
  EXPECT_TRUE(priced) << ::testing::PrintToString(r.held_back);
  EXPECT_EQ(r.stop_reason.rfind("reached --budget", 0), 0u) << r.stop_reason;
}

TEST(LadderTest, UnderABudgetChangesGoByGainPerSecondAndACompilePaysItsPriceFirst) {
  const AttemptPrices prices{4, kCompilePriorS, 0};
  EXPECT_EQ(price_of_attempt(prices, false), 4);
  EXPECT_EQ(price_of_attempt(prices, true), 4 + kCompilePriorS);
  // A kept change is followed by its rung's breakdown: that is paid too.
  EXPECT_EQ(price_of_attempt({4, kCompilePriorS, 3}, true), 4 + kCompilePriorS + 3);
  // A compile addressing half the step against DDP's no_sync addressing a tenth of it: 0.5 per
  // 34 s is less than 0.1 per 4 s. Equal ratios keep the advised order.
  const std::vector<double> weights = {0.5, 0.1, 0.05, 0.05};
  const std::vector<double> seconds = {price_of_attempt(prices, true), 4, 2, 2};
  EXPECT_EQ(order_by_gain_per_second(weights, seconds), (std::vector<std::size_t>{1, 2, 3, 0}));
  // A price measured as nothing (an injected clock) still orders by weight.
  EXPECT_EQ(order_by_gain_per_second({0.1, 0.3}, {0, 0}), (std::vector<std::size_t>{1, 0}));
}

}  // namespace
}  // namespace torchperf
