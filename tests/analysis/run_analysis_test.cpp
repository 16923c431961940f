#include "torchperf/analysis/run_analysis.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/known_runs.h"

#include <algorithm>
#include <map>

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
  const auto format = std::find_if(analysis_.effects.begin(), analysis_.effects.end(),
                                   [](const KnobEffects& k) { return k.knob == "format"; });
  ASSERT_NE(format, analysis_.effects.end());
  EXPECT_EQ(format->effects[0].estimate.pairs, 7u);  // 8 minus the failed one's
}

TEST_F(RunAnalysisTest, ParetoFrontsHoldOnlyUndominatedPoints) {
  ASSERT_EQ(analysis_.fronts.size(), 3u);
  std::map<std::string, const PointResult*> by_key;
  for (std::size_t i : analysis_.measured) by_key[analysis_.run.points[i].key] = &analysis_.run.points[i];
  const auto x_of = [](const std::string& front, const PointMetrics& m) {
    if (front == "throughput-p99") return m.latency_p99_ms;
    if (front == "throughput-memory") return static_cast<double>(m.peak_memory_bytes);
    return 1 - m.cosine;
  };
  for (const auto& f : analysis_.fronts) {
    ASSERT_FALSE(f.keys.empty()) << f.name;
    for (const auto& key : f.keys) {
      const PointMetrics& on = by_key.at(key)->metrics;
      // No measured point is at least as good on both axes and better on one.
      for (const auto& [other_key, other] : by_key) {
        const PointMetrics& m = other->metrics;
        const bool dominates = x_of(f.name, m) <= x_of(f.name, on) && m.throughput >= on.throughput &&
                               (x_of(f.name, m) < x_of(f.name, on) || m.throughput > on.throughput);
        EXPECT_FALSE(dominates) << f.name << ": " << other_key << " dominates " << key;
      }
    }
  }
  // The fastest point is on every front.
  for (const auto& f : analysis_.fronts)
    EXPECT_NE(std::find(f.keys.begin(), f.keys.end(), analysis_.winner.value()), f.keys.end())
        << f.name;
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

// Two more runs with one twist each, to pin down how words follow the estimates.
RunAnalysis analyze_synthetic(const testing::SyntheticRun& run, const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("torchperf-run-analysis-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  testing::write_synthetic_run(dir.string(), run);
  RunAnalysis a = analyze(load_run(dir.string()));
  fs::remove_all(dir);
  return a;
}

TEST(RunAnalysisRules, TheValueRecommendedIsTheBestOneThatHelpsNotTheLargestRatio) {
  // threads=4 looks fastest (1.3x) on one pair without an interval (its points have none);
  // threads=1 helps 1.1x over 4 pairs with intervals.
  testing::SyntheticRun run;
  run.axes = {{"threads", {"2", "1", "4"}}, {"grad", {"on", "no_grad"}}, {"batch", {"1", "8"}}};
  run.points = testing::full_factorial(run.axes, [](const auto& k) {
    const double wobble = k.at("grad") == "no_grad" ? 1.004 : 0.998;
    return 100.0 * (k.at("threads") == "1" ? 1.1 * (k.at("batch") == "8" ? 1.003 : 0.997) : 1.0) *
           (k.at("threads") == "4" ? 1.3 : 1.0) * wobble;
  });
  // Keep one threads=4 point (at the origin's context); drop the rest.
  std::vector<testing::SyntheticPoint> kept;
  for (const auto& p : run.points)
    if (p.knobs.at("threads") != "4" || (p.knobs.at("grad") == "on" && p.knobs.at("batch") == "1")) {
      kept.push_back(p);
      if (p.knobs.at("threads") == "4") kept.back().has_ci = false;
    }
  run.points = kept;
  const RunAnalysis a = analyze_synthetic(run, "best");
  bool found = false;
  for (const auto& r : a.recommendations)
    if (r.kind == "use" && r.text == "use threads=1") found = true;
  EXPECT_TRUE(found);
}

TEST(RunAnalysisRules, AnEffectWithinTheNegligibleBandIsNeverAdvice) {
  // threads=2 measures 0.983x and cudnn_benchmark=on 0.982x, each with a tight interval (as on
  // the first GPU, where the report said "avoid" both): noise, not advice. grad helps 1.2x.
  testing::SyntheticRun run;
  run.axes = {{"threads", {"1", "2"}}, {"cudnn_benchmark", {"off", "on"}}, {"grad", {"on", "no_grad"}}};
  run.points = testing::full_factorial(run.axes, [](const auto& k) {
    return 100.0 * (k.at("threads") == "2" ? 0.983 : 1.0) *
           (k.at("cudnn_benchmark") == "on" ? 0.982 : 1.0) * (k.at("grad") == "no_grad" ? 1.2 : 1.0);
  });
  const RunAnalysis a = analyze_synthetic(run, "best");
  bool grad_advised = false;
  for (const auto& r : a.recommendations) {
    EXPECT_EQ(r.text.find("threads=2"), std::string::npos) << r.kind << ": " << r.text;
    EXPECT_EQ(r.text.find("cudnn_benchmark=on"), std::string::npos) << r.kind << ": " << r.text;
    grad_advised |= r.kind == "use" && r.text == "use grad=no_grad";
  }
  EXPECT_TRUE(grad_advised);
}

TEST(RunAnalysisRules, AnEffectOnOneSideOfAnotherKnobIsSaidEvenWhenTheAverageIsNot) {
  // grad=no_grad helps 1.3x with batch=8 and does nothing at batch 1. Over its two pairs the
  // average (1.14x) has an interval spanning both, so it is not significant; the interaction, from
  // the points' own +-2% intervals, is.
  testing::SyntheticRun run;
  run.axes = {{"batch", {"1", "8"}}, {"grad", {"on", "no_grad"}}};
  run.points = testing::full_factorial(run.axes, [](const auto& k) {
    return k.at("grad") == "no_grad" && k.at("batch") == "8" ? 130.0 : 100.0;
  });
  const RunAnalysis a = analyze_synthetic(run, "conditional");
  const auto grad = std::find_if(a.effects.begin(), a.effects.end(),
                                 [](const KnobEffects& k) { return k.knob == "grad"; });
  ASSERT_NE(grad, a.effects.end());
  EXPECT_FALSE(grad->effects[0].estimate.significant());
  std::string all;
  for (const auto& r : a.recommendations) all += r.kind + ": " + r.text + "\n";
  EXPECT_NE(all.find("conditional: use grad=no_grad only together with batch=8"), std::string::npos)
      << all;
}

TEST(RunAnalysisWords, RatiosAreDescribedWithTheirIntervalsAndCounts) {
  EffectEstimate e;
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

namespace torchperf {
namespace {

PointResult two_runtime_point(const std::string& key, double throughput, double compile_s,
                              int graph_breaks) {
  PointResult p;
  p.key = key;
  p.status = PointStatus::kOk;
  p.metrics.throughput = throughput;
  p.metrics.throughput_low = throughput * 0.98;
  p.metrics.throughput_high = throughput * 1.02;
  p.metrics.latency_p99_ms = 1000 / throughput;
  p.score = throughput;
  p.measurement = {{"compile", compile_s < 0 ? nlohmann::json(nullptr)
                                             : nlohmann::json{{"compile_s", compile_s},
                                                              {"cache_hit", false},
                                                              {"package", ""},
                                                              {"graph_breaks", graph_breaks},
                                                              {"graph_break_reasons",
                                                               {"Unsupported Tensor.item()"}}}}};
  return p;
}

RunResults two_runtime_run() {
  RunResults r;
  r.label = "both";
  r.objective = "throughput";
  r.axes = {{"runtime", {"cpp", "python"}},
            {"grad", {"on", "inference"}},
            {"graph", {"aoti", "eager", "compile"}}};
  r.origin = "runtime=cpp,graph=aoti";
  r.points = {two_runtime_point("runtime=cpp,graph=aoti", 100, 20, 0),
              two_runtime_point("runtime=python,grad=on,graph=eager", 50, -1, 0),
              two_runtime_point("runtime=python,grad=on,graph=compile", 80, 10, 2),
              two_runtime_point("runtime=python,grad=inference,graph=eager", 60, -1, 0),
              two_runtime_point("runtime=python,grad=inference,graph=compile", 95, 10, 2)};
  return r;
}

const MainEffect* effect_of(const RunAnalysis& a, const std::string& knob, const std::string& value) {
  for (const auto& k : a.effects)
    for (const auto& e : k.effects)
      if (k.knob == knob && e.value == value) return &e;
  return nullptr;
}

}  // namespace

TEST(RunAnalysisTwoRuntimesTest, PythonIsMeasuredAgainstCppEachAtItsOwnBaseline) {
  const RunAnalysis a = analyze(two_runtime_run());
  const MainEffect* python = effect_of(a, "runtime", "python");
  ASSERT_NE(python, nullptr);
  EXPECT_EQ(python->reference, "cpp");
  EXPECT_NEAR(python->estimate.ratio, 0.5, 1e-9) << "eager (grad on) against aoti";
  const MainEffect* compile = effect_of(a, "graph", "compile");
  ASSERT_NE(compile, nullptr);
  EXPECT_EQ(compile->reference, "aoti (C++) / eager (Python)");
  EXPECT_GT(compile->estimate.ratio, 1.5) << "compile against eager, within Python";
  EXPECT_EQ(effect_of(a, "graph", "eager"), nullptr) << "eager is Python's reference";
}

TEST(RunAnalysisTwoRuntimesTest, TheBestOfEachRuntimeAndACompileTimeFrontAreNamed) {
  const RunAnalysis a = analyze(two_runtime_run());
  // One best per runtime type: AOTInductor in C++, eager and torch.compile in Python.
  ASSERT_EQ(a.best_of_runtime.size(), 3u);
  EXPECT_EQ(a.run.points[a.best_of_runtime.at("C++ AOTInductor")].key, "runtime=cpp,graph=aoti");
  EXPECT_EQ(a.run.points[a.best_of_runtime.at("Python torch.compile")].key,
            "runtime=python,grad=inference,graph=compile");
  EXPECT_EQ(a.run.points[a.best_of_runtime.at("Python eager")].key,
            "runtime=python,grad=inference,graph=eager");
  const auto front = std::find_if(a.fronts.begin(), a.fronts.end(),
                                  [](const ParetoFront& f) { return f.name == "throughput-compile"; });
  ASSERT_NE(front, a.fronts.end());
  EXPECT_EQ(front->keys, (std::vector<std::string>{"runtime=python,grad=inference,graph=eager",
                                                   "runtime=python,grad=inference,graph=compile",
                                                   "runtime=cpp,graph=aoti"}));
  std::map<std::string, const Recommendation*> by_kind;
  for (const auto& r : a.recommendations) by_kind.emplace(r.kind, &r);
  ASSERT_TRUE(by_kind.count("runtime"));
  EXPECT_NE(by_kind["runtime"]->text.find("best in C++ AOTInductor: runtime=cpp,graph=aoti"),
            std::string::npos)
      << by_kind["runtime"]->text;
  EXPECT_NE(by_kind["runtime"]->evidence.find(
                "C++ AOTInductor: 100 (95% CI 98-102) samples/s, compile 20.0 s"),
            std::string::npos)
      << by_kind["runtime"]->evidence;
  ASSERT_TRUE(by_kind.count("graph-breaks"));
  EXPECT_NE(by_kind["graph-breaks"]->text.find("up to 2 time(s) (2 point(s))"), std::string::npos)
      << by_kind["graph-breaks"]->text;
  EXPECT_NE(by_kind["graph-breaks"]->evidence.find("Unsupported Tensor.item()"), std::string::npos);
}

TEST(RunAnalysisTwoRuntimesTest, ARunOfOneRuntimeNamesNoBestOfEachNorACompileFront) {
  RunResults r = two_runtime_run();
  // Only torch.compile's points: one runtime.
  r.points.erase(std::remove_if(r.points.begin(), r.points.end(),
                                [](const PointResult& p) {
                                  return p.key.find("graph=compile") == std::string::npos;
                                }),
                 r.points.end());
  for (auto& p : r.points) p.measurement = nlohmann::json::object();
  const RunAnalysis a = analyze(r);
  EXPECT_TRUE(a.best_of_runtime.empty());
  for (const auto& f : a.fronts) EXPECT_NE(f.name, "throughput-compile");
}

TEST(HumanNumberTest, LargeFiguresReadInGroupsOfThreeAndSmallOnesWithFourDigits) {
  EXPECT_EQ(human_number(808830.4), "808,830");
  EXPECT_EQ(human_number(1234567), "1,234,567");
  EXPECT_EQ(human_number(999.94), "999.9");
  EXPECT_EQ(human_number(44.44), "44.44");
  EXPECT_EQ(human_number(-1500), "-1,500");
  PointMetrics m;
  m.throughput = 808830;
  m.throughput_low = 800000;
  m.throughput_high = 812345;
  EXPECT_EQ(throughput_with_interval(m), "808,830 (95% CI 800,000-812,345)");
}

}  // namespace torchperf
