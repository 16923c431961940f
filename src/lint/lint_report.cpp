#include "torchperf/lint/lint_report.h"

#include <fmt/format.h>

#include <map>

#include "torchperf/report/analysis_text.h"
#include "torchperf/report/html_report.h"

namespace torchperf {
namespace {

std::string where(const Finding& f) {
  std::string w = f.module.empty() ? (f.op.empty() ? "process" : "forward") : f.module;
  if (!f.source.empty()) w += " (" + f.source + ")";
  return w;
}

TextTable findings_table(const LintReport& r) {
  TextTable t;
  t.header = {"severity", "rule", "where", "evidence", "fix"};
  for (const auto& f : r.findings)
    t.rows.push_back({to_string(f.severity), f.rule, where(f), f.evidence,
                      f.fix + (f.fixable ? " [--fix]" : "")});
  return t;
}

std::string counts(const LintReport& r) {
  std::map<Severity, int> n;
  for (const auto& f : r.findings) ++n[f.severity];
  return fmt::format("{} finding(s): {} error, {} warning, {} info", r.findings.size(),
                     n[Severity::kError], n[Severity::kWarning], n[Severity::kInfo]);
}

}  // namespace

std::string format_lint(const LintReport& r) {
  std::string out = "lint " + r.model + "\n";
  if (r.findings.empty()) return out + "  no findings\n";
  out += findings_table(r).render(TextFormat::kTerminal);
  out += "  " + counts(r) + "\n";
  if (!r.vector_evidence.empty()) out += "  sizes: " + r.vector_evidence + "\n";
  return out;
}

nlohmann::json to_json(const LintReport& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings)
    findings.push_back({{"rule", f.rule},
                        {"severity", to_string(f.severity)},
                        {"module", f.module},
                        {"source", f.source},
                        {"op", f.op},
                        {"evidence", f.evidence},
                        {"fix", f.fix},
                        {"fixable", f.fixable}});
  return {{"schema", "torchperf.lint/1"},
          {"model", r.model},
          {"size_multiple_evidence", r.vector_evidence},
          {"findings", findings}};
}

std::string render_lint_html(const LintReport& r) {
  HtmlPage page;
  page.title = "torchperf lint: " + r.model;
  page.header_lines = {counts(r)};
  if (!r.vector_evidence.empty()) page.header_lines.push_back("sizes: " + r.vector_evidence);
  page.body_before_plots = r.findings.empty() ? "<p>No findings.</p>"
                                              : html_table(findings_table(r));
  return render_page(page);
}

}  // namespace torchperf
