// A lint report for people (a terminal table, an HTML page) and for machines (JSON,
// "torchperf.lint/1"; docs/report-schema.md).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "torchperf/lint/finding.h"

namespace torchperf {

std::string format_lint(const LintReport& report);
nlohmann::json to_json(const LintReport& report);
std::string render_lint_html(const LintReport& report);

}  // namespace torchperf
