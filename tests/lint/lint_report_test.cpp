#include "torchperf/lint/lint_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"

namespace torchperf {
namespace {

LintReport one_finding() {
  LintReport r;
  r.model = "model.pt";
  Finding f;
  f.rule = "conv-bias-before-bn";
  f.severity = Severity::kWarning;
  f.module = "layer1.conv";
  f.source = "model.py:12";
  f.op = "aten::_convolution";
  f.evidence = "layer1.conv adds a bias <b>";
  f.fix = "bias=False";
  f.fixable = true;
  r.findings.push_back(f);
  return r;
}

}  // namespace

TEST(LintReportTest, TheTableNamesWhereEachFindingIsAndWhetherFixCanApplyIt) {
  const std::string text = format_lint(one_finding());
  EXPECT_NE(text.find("layer1.conv (model.py:12)"), std::string::npos) << text;
  EXPECT_NE(text.find("[--fix]"), std::string::npos) << text;
  EXPECT_NE(text.find("1 finding(s): 0 error, 1 warning, 0 info"), std::string::npos) << text;
}

TEST(LintReportTest, NoFindingsSaysSo) {
  LintReport r;
  r.model = "clean.pt";
  EXPECT_NE(format_lint(r).find("no findings"), std::string::npos);
}

TEST(LintReportTest, JsonCarriesEveryFieldUnderItsSchema) {
  const auto j = to_json(one_finding());
  EXPECT_EQ(j.at("schema"), "torchperf.lint/1");
  const auto& f = j.at("findings").at(0);
  EXPECT_EQ(f.at("rule"), "conv-bias-before-bn");
  EXPECT_EQ(f.at("severity"), "warning");
  EXPECT_EQ(f.at("module"), "layer1.conv");
  EXPECT_EQ(f.at("source"), "model.py:12");
  EXPECT_TRUE(f.at("fixable").get<bool>());
}

TEST(LintReportTest, TheHtmlPageEscapesWhatTheModelNamed) {
  const std::string html = render_lint_html(one_finding());
  EXPECT_NE(html.find("&lt;b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
}

TEST(LintReportTest, ThePageOpensInHeadlessChromiumWithEveryFindingAndNoScriptError) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("torchperf-lint-html-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path page = dir / "lint.html";
  std::ofstream(page) << render_lint_html(one_finding());
  fs::create_directories("test-artifacts");
  const std::string dom = testing::browser_dom(page.string(), dir.string(),
                                               fs::absolute("test-artifacts/lint.png").string());
  EXPECT_NE(dom.find("conv-bias-before-bn"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("layer1.conv (model.py:12)"), std::string::npos);
  // The page's driver reports script errors in #torchperf-status; a page without plots has none.
  const auto at = dom.find("id=\"torchperf-status\">");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(dom.find("\"errors\":[]", at), std::string::npos) << dom.substr(at, 300);
  fs::remove_all(dir);
}

}  // namespace torchperf
