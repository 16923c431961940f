#include "torchperf/lint/lint_report.h"

#include <gtest/gtest.h>

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

}  // namespace torchperf
