#include "torchperf/train/train_report.h"

#include <gtest/gtest.h>

namespace torchperf {
namespace {

TrainReport report() {
  TrainReport r;
  r.model = "builtin:resnet18";
  r.data = "synthetic-cifar";
  r.configuration = "workers=0";
  StepTimes t;
  t.ns = {4e6, 1e6, 3e6, 5e6, 1e6, 0};
  t.total_ns = 14e6;
  t.samples = 32;
  r.breakdown = summarize_steps({t, t});
  r.advice.push_back({"data-wait", "more workers", "data wait is 28.6%", "workers", "1", false, 0.3});
  return r;
}

TEST(TrainReportTest, TheTableListsEveryPhaseAndTheAdviceItsEvidence) {
  const std::string text = format_train_report(report());
  for (const char* phase : {"data wait", "copy", "forward", "backward", "optimizer", "other"})
    EXPECT_NE(text.find(phase), std::string::npos) << phase;
  EXPECT_NE(text.find("workers=1"), std::string::npos);
  EXPECT_NE(text.find("data wait is 28.6%"), std::string::npos);
}

TEST(TrainReportTest, JsonCarriesPhasesInMilliseconds) {
  const nlohmann::json j = to_json(report());
  EXPECT_DOUBLE_EQ(j["breakdown"]["phases"]["data_wait"]["ms"].get<double>(), 4.0);
  EXPECT_EQ(j["advice"][0]["knob"], "workers");
}

TEST(TrainReportTest, TheLadderTableHasOneRowPerRungWithTheCumulativeSpeedup) {
  TrainReport r = report();
  LadderResult l;
  Rung first;
  first.breakdown = r.breakdown;
  Rung second = first;
  second.step = 1;
  second.change = "workers=1";
  second.speedup = {1.5, {1.4, 1.6}, {1.5, 1.5, 1.5}};
  second.cumulative = 1.5;
  l.rungs = {first, second};
  l.stop_reason = "no advised change won head to head";
  r.ladder = l;
  const std::string text = format_train_report(r);
  EXPECT_NE(text.find("naive loop"), std::string::npos);
  EXPECT_NE(text.find("1.50x (1.40-1.60)"), std::string::npos);
  EXPECT_NE(text.find("last step"), std::string::npos);
}

TEST(TrainReportTest, TheStackedBarHasOneRectPerPhaseAndConfiguration) {
  const Panel p = breakdown_panel(report());
  EXPECT_EQ(p.expected_marks.at("rect"), static_cast<int>(kPhaseCount));
  EXPECT_EQ(p.spec["encoding"]["x"]["stack"], "zero");
  const std::string html = render_train_html(report());
  EXPECT_NE(html.find("torchperf-status"), std::string::npos);
  EXPECT_NE(html.find("\"breakdown\""), std::string::npos);
}

}  // namespace
}  // namespace torchperf
