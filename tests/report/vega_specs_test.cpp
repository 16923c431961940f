#include "torchperf/report/vega_specs.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/known_runs.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

class VegaSpecsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("torchperf-vega-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_synthetic_run((dir_ / "a").string(), testing::known_run());
    testing::write_synthetic_run((dir_ / "b").string(), testing::known_run());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

const Panel& panel(const std::vector<Panel>& panels, const std::string& id) {
  for (const auto& p : panels)
    if (p.id == id) return p;
  throw std::runtime_error("no panel " + id);
}

TEST_F(VegaSpecsTest, EverySweptKnobGetsAScatterOfEveryMeasuredPoint) {
  const auto panels = report_panels({analyze(load_run((dir_ / "a").string()))});
  for (const char* knob : {"threads", "grad", "precision", "format"}) {
    const Panel& p = panel(panels, std::string("scatter-") + knob);
    EXPECT_EQ(p.expected_marks.at("symbol"), 15) << knob;  // 16 points, one failed
    EXPECT_EQ(p.spec.at("data").at("values").size(), 15u);
    EXPECT_EQ(p.spec.at("layer").at(1).at("encoding").at("color").at("field"), knob);
    EXPECT_EQ(p.spec.at("$schema"), "https://vega.github.io/schema/vega-lite/v6.json");
  }
}

TEST_F(VegaSpecsTest, EffectsInteractionsAndParetoPanelsCountTheirMarks) {
  const RunAnalysis a = analyze(load_run((dir_ / "a").string()));
  const auto panels = report_panels({a});
  std::size_t effects = 0;
  for (const auto& k : a.effects) effects += k.effects.size();
  EXPECT_EQ(panel(panels, "effects").expected_marks.at("rect"), static_cast<int>(effects));
  EXPECT_EQ(panel(panels, "interactions").expected_marks.at("rect"),
            static_cast<int>(2 * a.interactions.size()));  // both halves of the matrix
  for (const char* id : {"pareto-p99", "pareto-memory", "pareto-accuracy"})
    EXPECT_EQ(panel(panels, id).expected_marks.at("symbol"), 15) << id;
}

TEST_F(VegaSpecsTest, AKnobWhoseMeasuredPointsHoldOneValueAndAnEmptyRunGetNoPlot) {
  RunAnalysis a = analyze(load_run((dir_ / "a").string()));
  // Only the points at one threads value measured: every dot would be one colour.
  const std::string kept = knob_value(a.run.points[a.measured.front()].key, "threads");
  std::vector<std::size_t> same;
  for (std::size_t i : a.measured)
    if (knob_value(a.run.points[i].key, "threads") == kept) same.push_back(i);
  a.measured = same;
  const auto panels = report_panels({a});
  for (const auto& p : panels) EXPECT_NE(p.id, "scatter-threads");
  RunAnalysis empty = a;
  empty.measured.clear();
  empty.effects.clear();
  empty.interactions.clear();
  EXPECT_TRUE(report_panels({empty}).empty());
}

TEST_F(VegaSpecsTest, TheRankAxisHasWholeTicks) {
  const auto panels = report_panels({analyze(load_run((dir_ / "a").string()))});
  const auto& axis = panel(panels, "scatter-threads").spec.at("layer").at(1).at("encoding").at("x").at("axis");
  EXPECT_EQ(axis.at("tickMinStep"), 1);
  EXPECT_EQ(axis.at("format"), "d");
}

TEST_F(VegaSpecsTest, SeveralRunsAreFacetedByRun) {
  RunAnalysis a = analyze(load_run((dir_ / "a").string()));
  RunAnalysis b = analyze(load_run((dir_ / "b").string()));
  const auto panels = report_panels({a, b});
  const Panel& scatter = panel(panels, "scatter-threads");
  EXPECT_EQ(scatter.spec.at("facet").at("field"), "run");
  EXPECT_TRUE(scatter.spec.contains("spec"));
  EXPECT_EQ(scatter.expected_marks.at("symbol"), 30);
}

}  // namespace
}  // namespace torchperf
