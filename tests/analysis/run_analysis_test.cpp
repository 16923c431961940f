#include "torchperf/analysis/run_analysis.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/known_runs.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

class RunAnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("torchperf-run-analysis-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_synthetic_run(dir_.string(), testing::known_run());
    analysis_ = analyze(load_run(dir_.string()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  const Recommendation* find(const std::string& kind, const std::string& piece) const {
    for (const auto& r : analysis_.recommendations)
      if (r.kind == kind && r.text.find(piece) != std::string::npos) return &r;
    return nullptr;
  }
  std::string all_recommendations() const {
    std::string s;
    for (const auto& r : analysis_.recommendations) s += r.kind + ": " + r.text + " | " + r.evidence + "\n";
    return s;
  }
  fs::path dir_;
  RunAnalysis analysis_;
};

TEST_F(RunAnalysisTest, TheWinnerComesFirstWithItsHeadToHeadEvidence) {
  ASSERT_FALSE(analysis_.recommendations.empty());
  const auto& first = analysis_.recommendations.front();
  EXPECT_EQ(first.kind, "winner");
  EXPECT_NE(first.text.find("precision=bf16-autocast,format=channels_last"), std::string::npos);
  EXPECT_NE(first.evidence.find("2.000x (1.900-2.100) over the baseline"), std::string::npos)
      << first.evidence;
  EXPECT_NE(first.evidence.find("cosine 0.99950"), std::string::npos) << first.evidence;
}

TEST_F(RunAnalysisTest, EachKnobGetsAdviceInWordsMatchingItsKnownEffect) {
  const std::string all = all_recommendations();
  const Recommendation* avoid = find("avoid", "threads=1");
  ASSERT_NE(avoid, nullptr) << all;
  EXPECT_NE(avoid->evidence.find("0.70"), std::string::npos) << avoid->evidence;
  ASSERT_NE(find("use", "precision=bf16-autocast"), nullptr) << all;
  EXPECT_NE(find("use", "precision=bf16-autocast")->evidence.find("worst cosine 0.99000"),
            std::string::npos);
  const Recommendation* only = find("conditional", "format=channels_last only together with "
                                                   "precision=bf16-autocast");
  ASSERT_NE(only, nullptr) << all;
  EXPECT_NE(only->evidence.find("with precision=bf16-autocast but "), std::string::npos)
      << only->evidence;
  ASSERT_NE(find("no-effect", "grad"), nullptr) << all;
  EXPECT_EQ(analysis_.inert_knobs, std::vector<std::string>{"grad"});
}

TEST_F(RunAnalysisTest, TheStrongestInteractionIsFormatWithPrecision) {
  ASSERT_FALSE(analysis_.interactions.empty());
  const Interaction& top = analysis_.interactions.front();
  EXPECT_EQ(top.knob_a, "precision");
  EXPECT_EQ(top.knob_b, "format");
  EXPECT_NEAR(top.estimate.ratio, 1.3, 0.02);
  EXPECT_TRUE(top.estimate.significant());
  const std::string words = describe_interaction(top);
  // Told from format's side: its effect is 1.3x with bf16 and nothing with fp32.
  EXPECT_EQ(words.find("format=channels_last gives "), 0u) << words;
  EXPECT_NE(words.find("x with precision=bf16-autocast but "), std::string::npos) << words;
  EXPECT_NE(words.find("x with precision=fp32 (ratio of ratios "), std::string::npos) << words;
  EXPECT_NEAR(top.b_at_value_a.ratio, 1.3, 0.02);
  EXPECT_NEAR(top.b_at_reference_a.ratio, 1.0, 0.02);
}

TEST_F(RunAnalysisTest, FailedPointsAreListedAndLeftOutOfTheEstimates) {
  ASSERT_EQ(analysis_.failed.size(), 1u);
  EXPECT_EQ(analysis_.run.points[analysis_.failed[0]].reason, "worker died on signal SIGSEGV");
  EXPECT_EQ(analysis_.measured.size(), 15u);  // the guarded one was measured
  ASSERT_EQ(analysis_.guarded.size(), 1u);
  for (const auto& k : analysis_.effects)
    if (k.knob == "format") {
      EXPECT_EQ(k.effects[0].estimate.pairs, 7u);  // 8 minus the failed one's
    }
}

TEST_F(RunAnalysisTest, ParetoFrontsHoldOnlyUndominatedPoints) {
  ASSERT_EQ(analysis_.fronts.size(), 3u);
  for (const auto& f : analysis_.fronts) {
    EXPECT_FALSE(f.keys.empty()) << f.name;
    // The fastest point is on every front that trades speed against something.
    if (f.name != "throughput-accuracy") {
      EXPECT_EQ(f.keys.back().find("threads=2"), 0u) << f.name;
    }
  }
}

TEST_F(RunAnalysisTest, TheJsonCarriesTheSameNumbers) {
  const nlohmann::json j = to_json(analysis_);
  EXPECT_EQ(j.at("kind"), "report");
  EXPECT_EQ(j.at("winner"), analysis_.winner.value());
  EXPECT_EQ(j.at("main_effects").size(), analysis_.effects.size());
  EXPECT_EQ(j.at("interactions").size(), analysis_.interactions.size());
  EXPECT_EQ(j.at("failed").size(), 1u);
  EXPECT_TRUE(j.at("pareto").contains("throughput-p99"));
}

TEST(RunAnalysisWords, RatiosAreDescribedWithTheirIntervalsAndCounts) {
  RatioEstimate e;
  e.ratio = 1.171;
  e.low = 1.096;
  e.high = 1.257;
  e.pairs = 16;
  EXPECT_EQ(describe_ratio(e), "1.171x (1.096-1.257, 16 pairs)");
  e.pairs = 1;
  e.low = e.high = NAN;
  EXPECT_EQ(describe_ratio(e), "1.171x (1 pair, no interval)");
  e.low = 1.1;
  e.high = 1.2;
  e.measurement_interval = true;
  EXPECT_EQ(describe_ratio(e), "1.171x (1.100-1.200, 1 pair; interval from the points' own CIs)");
}

}  // namespace
}  // namespace torchperf
