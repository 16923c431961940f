#include "torchperf/report/tune_summary.h"

#include <gtest/gtest.h>

namespace torchperf {
namespace {

PointResult point(const std::string& key, const std::string& status, double throughput) {
  PointResult p;
  p.key = key;
  p.status = point_status_from_string(status);
  p.metrics.throughput = throughput;
  p.metrics.throughput_low = throughput * 0.98;
  p.metrics.throughput_high = throughput * 1.02;
  p.score = throughput;
  return p;
}

TuneResult made_up() {
  TuneResult r;
  r.workload.model = "builtin:mlp";
  r.journal_path = "runs/x/results.jsonl";
  r.origin = "threads=1,grad=on";
  r.points = {point("threads=1,grad=on", "ok", 100), point("threads=1,grad=no_grad", "ok", 130),
              point("threads=2,grad=on", "guarded", 150),
              point("threads=2,grad=no_grad", "failed", 0)};
  r.points[2].reason = "accuracy guard: cosine 0.9 < 0.999";
  r.points[3].failure = PointFailure::ended(Ending::kCrashed);
  r.points[3].reason = "worker died on signal SIGABRT";
  r.winner = "threads=1,grad=no_grad";
  r.winner_note = "its lead over the runners-up is significant head to head";
  r.vs_baseline = HeadToHead{"threads=1,grad=no_grad", "grad=on", 1.3, 1.25, 1.35, 20, Verdict::kFaster, ""};
  r.careful = "threads=1,grad=no_grad";
  r.baseline = "threads=1,grad=on";
  r.single_changes = {{"grad", "no_grad", "threads=1,grad=no_grad", 1.3, 1.25, 1.35},
                      {"threads", "2", "threads=2,grad=on", 0.8, 0.7, 0.9}};
  return r;
}

}  // namespace

TEST(TuneSummaryTest, NamesTheWinnerWithItsHeadToHeadEvidence) {
  const std::string out = format_tune(made_up());
  EXPECT_NE(out.find("WINNER threads=1,grad=no_grad"), std::string::npos) << out;
  EXPECT_NE(out.find("1.300x (1.250-1.350), 95% CI over 20 interleaved rounds: faster"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("the winner is the careful (eval, no autograd) configuration itself"),
            std::string::npos);
  // The careful baseline leads, before the baseline.
  EXPECT_LT(out.find("careful (eval, no autograd)"), out.find("speedup over the baseline")) << out;
}

TEST(TuneSummaryTest, AProgramsBaselineIsNamedOnceAsTheCarefulConfiguration) {
  TuneResult r = made_up();
  r.vs_baseline.reset();
  r.careful = r.baseline = "threads=1,grad=on";
  r.vs_careful = HeadToHead{"threads=1,grad=no_grad", "threads=1,grad=on", 1.3, 1.25, 1.35, 20,
                            Verdict::kFaster, ""};
  const std::string out = format_tune(r);
  EXPECT_NE(out.find("speedup over careful (eval, no autograd) (batch"), std::string::npos) << out;
  EXPECT_NE(out.find("the baseline is the careful configuration"), std::string::npos) << out;
  EXPECT_EQ(out.find("speedup over the baseline"), std::string::npos) << out;
  EXPECT_EQ(out.find("the winner is the baseline itself"), std::string::npos) << out;
}

TEST(TuneSummaryTest, AStreamsCarefulConfigurationIsNamedAsTheSortedLoopItIs) {
  TuneResult r = made_up();
  r.careful = "threads=1,batch=16,batching=sorted:256";
  r.vs_careful = HeadToHead{"threads=1,grad=no_grad", r.careful, 2.4, 2.1, 2.7, 4,
                            Verdict::kFaster, ""};
  const std::string out = format_tune(r);
  EXPECT_NE(out.find("speedup over careful (eval, no autograd, each window sorted by length)"),
            std::string::npos)
      << out;
}

TEST(TuneSummaryTest, ComparisonsFromTheSweepsLeaderAreLabelledWhenARunnerUpWon) {
  TuneResult r = made_up();
  r.winner_note = "head to head, it beat the sweep's leader threads=2,grad=on (1.016x)";
  r.confirmation = {
      HeadToHead{"threads=2,grad=on", "threads=1,grad=no_grad", 0.984, 0.975, 0.994, 25,
                 Verdict::kSlower, ""},
      HeadToHead{"threads=1,grad=no_grad", "threads=1,grad=on", 1.3, 1.2, 1.4, 8,
                 Verdict::kFaster, ""}};
  const std::string out = format_tune(r);
  EXPECT_NE(out.find("the sweep's leader vs threads=1,grad=no_grad: 0.984x"), std::string::npos)
      << out;
  EXPECT_NE(out.find("\n       vs threads=1,grad=on: 1.300x"), std::string::npos) << out;
}

TEST(TuneSummaryTest, ListsHelpedHurtGuardedAndFailedPointsWithReasons) {
  const std::string out = format_tune(made_up());
  EXPECT_NE(out.find(" helped\n  grad=no_grad: 1.300x"), std::string::npos) << out;
  EXPECT_NE(out.find(" hurt\n  threads=2: 0.800x"), std::string::npos) << out;
  EXPECT_NE(out.find("cosine 0.9 < 0.999"), std::string::npos);
  EXPECT_NE(out.find("crashed: worker died on signal SIGABRT"), std::string::npos);
  EXPECT_NE(out.find("results: runs/x/results.jsonl"), std::string::npos);
}

TEST(TuneSummaryTest, SaysPlainlyWhenThereIsNoWinner) {
  TuneResult r = made_up();
  r.winner.reset();
  r.winner_note = "no configuration finished and passed the accuracy guard";
  EXPECT_NE(format_tune(r).find("NO WINNER: no configuration"), std::string::npos);
}

}  // namespace torchperf
