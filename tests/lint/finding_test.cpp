#include "torchperf/lint/finding.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {

TEST(FindingTest, SeveritiesReadBackFromTheirNames) {
  for (const auto s : {Severity::kInfo, Severity::kWarning, Severity::kError})
    EXPECT_EQ(parse_severity(to_string(s)), s);
}

TEST(FindingTest, AnUnknownSeverityIsAUsageErrorListingTheKnownOnes) {
  try {
    parse_severity("fatal");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("info, warning or error"), std::string::npos);
  }
}

TEST(FindingTest, CountingAtASeverityCountsEverythingAtLeastAsSevere) {
  LintReport r;
  for (const auto s : {Severity::kInfo, Severity::kWarning, Severity::kError}) {
    Finding f;
    f.severity = s;
    r.findings.push_back(f);
  }
  EXPECT_EQ(r.count_at_least(Severity::kInfo), 3u);
  EXPECT_EQ(r.count_at_least(Severity::kWarning), 2u);
  EXPECT_EQ(r.count_at_least(Severity::kError), 1u);
}

}  // namespace torchperf
