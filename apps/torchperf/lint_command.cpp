#include <iostream>
#include <memory>

#include "commands.h"
#include "exit_codes.h"
#include "report_files.h"
#include "torchperf/error.h"
#include "torchperf/lint/lint.h"
#include "torchperf/lint/lint_report.h"
#include "torchperf/measure/environment.h"
#include "torchperf/models/model.h"

namespace torchperf::cli {
namespace {

struct LintFlags {
  std::string model;
  std::string fail_on = "warning";
  std::string device = "cpu";
  std::string html;
  bool json = false;
};

}  // namespace

Runner add_lint_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "lint", "Find performance anti-patterns in a TorchScript model's graph, each with where it "
              "is, the evidence and the fix");
  auto f = std::make_shared<LintFlags>();
  cmd->add_option("model", f->model, "TorchScript file (.pt) or builtin:NAME")->required();
  cmd->add_option("--fail-on", f->fail_on,
                  "Exit with 3 when a finding is at least this severe: info, warning, error")
      ->default_str("warning");
  cmd->add_option("--device", f->device,
                  "Where the model will run (cpu or cuda): sets how severe host tensors are and "
                  "the size multiple")
      ->default_str("cpu");
  cmd->add_option("--html", f->html, "Also write the findings as an HTML page to this file");
  cmd->add_flag("--json", f->json, "Print the findings as JSON (torchperf.lint/1)");
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    const Severity fail_on = parse_severity(f->fail_on);
    if (f->device != "cpu" && f->device != "cuda")
      throw UsageError("--device '" + f->device + "': expected cpu or cuda");
    auto model = open_model(f->model)->load();
    TorchScriptModel* script = model->as_torchscript();
    if (!script)
      throw ModelError("lint reads TorchScript graphs, and '" + f->model + "' is not one");
    LintContext context;
    context.saved_training = model->is_training();
    context.cuda = f->device == "cuda";
    context.cpu_isa = capture_environment().cpu_isa;
    LintReport report;
    report.model = f->model;
    report.findings = lint_module(script->module(), context);
    for (auto& p : lint_process()) report.findings.push_back(std::move(p));
    for (const auto& finding : report.findings)
      if (finding.rule == "size-multiple") report.vector_evidence = preferred_multiple(context).evidence;
    if (!f->html.empty()) write_text_file(f->html, render_lint_html(report));
    if (f->json)
      std::cout << to_json(report).dump(2) << "\n";
    else
      std::cout << format_lint(report);
    return report.count_at_least(fail_on) > 0 ? kLintFindings : kSuccess;
  };
}

}  // namespace torchperf::cli
