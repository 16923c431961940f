#include "torchperf/lint/finding.h"

#include <algorithm>

#include "torchperf/error.h"

namespace torchperf {

std::string to_string(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "info";
}

Severity parse_severity(const std::string& text) {
  for (const auto s : {Severity::kInfo, Severity::kWarning, Severity::kError})
    if (to_string(s) == text) return s;
  throw UsageError("severity '" + text + "': expected info, warning or error");
}

std::size_t LintReport::count_at_least(Severity severity) const {
  return static_cast<std::size_t>(std::count_if(
      findings.begin(), findings.end(), [&](const Finding& f) { return f.severity >= severity; }));
}

}  // namespace torchperf
