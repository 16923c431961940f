#include "torchperf/lint/graph_breaks.h"

#include <gtest/gtest.h>

namespace torchperf {

TEST(GraphBreaksTest, EachBreakIsAWarningAtTheUsersLineWithDynamosAdvice) {
  GraphBreakReport report;
  report.graphs = 3;
  report.graph_breaks = 2;
  report.breaks = {{"Unsupported Tensor.item() call", "Set capture_scalar_outputs", "net.py:9"},
                   {"print", "", "net.py:12"}};
  const auto findings = graph_break_findings(report);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].rule, "graph-break");
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(findings[0].source, "net.py:9");
  EXPECT_EQ(findings[0].evidence, "break 1 of 2 (3 graphs): Unsupported Tensor.item() call");
  EXPECT_EQ(findings[0].fix, "Set capture_scalar_outputs");
  EXPECT_NE(findings[1].fix.find("rewrite this line"), std::string::npos) << "no hint: ours";
}

TEST(GraphBreaksTest, AModelThatTracesWholeIsOneInfoFinding) {
  GraphBreakReport report;
  report.graphs = 1;
  const auto findings = graph_break_findings(report);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "single-graph");
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
}

}  // namespace torchperf
