#include "torchperf/report/analysis_text.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/known_runs.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

class AnalysisTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("torchperf-text-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_synthetic_run((dir_ / "r18").string(), testing::known_run());
    testing::write_synthetic_run((dir_ / "other").string(), testing::known_run());
    run_ = analyze(load_run((dir_ / "r18").string()));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  RunAnalysis run_;
};

TEST_F(AnalysisTextTest, TheTerminalReportCarriesRecommendationsEffectsAndFailures) {
  const std::string text = format_report({run_}, TextFormat::kTerminal);
  for (const char* piece :
       {"Recommendations", "avoid threads=1", "use precision=bf16-autocast",
        "use format=channels_last only together with precision=bf16-autocast",
        "these knobs did nothing here: grad", "Main effects", "Interactions", "strongest: ",
        "Pareto fronts", "worker died on signal SIGSEGV", "accuracy guard: cosine 0.99 < 0.999",
        "Apply the winner", "Synthetic CPU"})
    EXPECT_NE(text.find(piece), std::string::npos) << piece << "\n" << text;
}

TEST_F(AnalysisTextTest, MarkdownHasTablesAndTheCodeThatAppliesTheWinner) {
  const std::string md = format_report({run_}, TextFormat::kMarkdown);
  EXPECT_EQ(md.rfind("# torchperf report", 0), 0u);
  EXPECT_NE(md.find("| rank | knob | value |"), std::string::npos) << md;
  EXPECT_NE(md.find("```cpp\n"), std::string::npos);
  EXPECT_NE(md.find("```python\n"), std::string::npos);
  EXPECT_NE(md.find("```json\n"), std::string::npos);
}

TEST_F(AnalysisTextTest, TwoRunsAreComparedSideBySide) {
  const auto other = analyze(load_run((dir_ / "other").string()));
  const std::string text = format_report({run_, other}, TextFormat::kTerminal);
  EXPECT_NE(text.find("Side by side: main effects"), std::string::npos);
  EXPECT_NE(text.find("r18"), std::string::npos);
  EXPECT_NE(text.find("other"), std::string::npos);
}

TEST(TextTableTest, ColumnsAlignAndMarkdownEscapesPipes) {
  TextTable t{{"a", "bee"}, {{"long value", "x"}, {"p|q", "y"}}};
  EXPECT_EQ(t.render(TextFormat::kTerminal, ""), "a           bee\nlong value  x\np|q         y\n");
  EXPECT_EQ(t.render(TextFormat::kMarkdown),
            "| a | bee |\n| --- | --- |\n| long value | x |\n| p\\|q | y |\n");
}

}  // namespace
}  // namespace torchperf
