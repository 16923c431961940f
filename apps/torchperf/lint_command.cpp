#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.h"
#include "exit_codes.h"
#include "python_source.h"
#include "report_files.h"
#include "torchperf/config/configuration.h"
#include "torchperf/error.h"
#include "torchperf/lint/fix.h"
#include "torchperf/lint/graph_breaks.h"
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
  // --fix
  bool fix = false;
  std::string out;
  bool force = false;
  std::vector<std::string> inputs;
  std::string inputs_file;
  std::string config = "careful";
  std::string accuracy;
  double time_s = 3;
  std::string from_python;  // MODULE:CALLABLE: its graph breaks, traced by torch._dynamo.explain
  double trace_timeout_s = 600;
};

std::string joined(const std::vector<std::string>& inputs) {
  std::string out;
  for (const auto& i : inputs) out += (out.empty() ? "" : ";") + i;
  return out;
}

// A model from Python source is not TorchScript: what lint reads of it is what torch.compile
// would make of it, its graph breaks.
std::vector<Finding> python_source_findings(const LintFlags& f) {
  if (f.fix)
    throw UsageError("--fix rewrites a TorchScript model; --from-python " + f.from_python +
                     " is traced for graph breaks only");
  const SourceExport request =
      python_source_request(f.from_python, f.model, joined(f.inputs), "to trace with");
  return graph_break_findings(explain_from_python(request, within(f.trace_timeout_s)));
}

// The rewrites measured, then the file written (or why not). Returns the JSON of the outcomes.
nlohmann::json fix(const LintFlags& f, bool quiet_table) {
  if (f.out.empty()) throw UsageError("--fix: expected --out FILE for the rewritten model");
  if (std::filesystem::exists(f.out) && !f.force)
    throw UsageError("--out '" + f.out + "' exists; expected a new path, or --force to replace it");
  FixOptions o;
  o.bench.model = f.model;
  o.bench.input_spec = joined(f.inputs);
  o.bench.inputs_file = f.inputs_file;
  o.bench.config = named_or_parsed(f.config);
  o.bench.time_s = f.time_s;
  o.bench.device = f.device;
  if (!f.accuracy.empty()) o.guard = AccuracyGuard::parse(f.accuracy);
  validate(o.bench);
  SteadyTimeSource clock;
  const auto outcomes = try_rewrites(o, clock, [&](const std::string& change) {
    if (!quiet_table) std::cerr << "measuring " << change << " against the model as given\n";
  });
  bool any = false;
  nlohmann::json j = nlohmann::json::array();
  if (!quiet_table)
    std::cout << "\nrewrites (each against the model as given, " << f.config << ")\n";
  for (const auto& r : outcomes) {
    any |= r.kept;
    const std::string ci = std::isnan(r.interval.low)
                               ? "no interval"
                               : fmt::format("{:.3f}-{:.3f}", r.interval.low, r.interval.high);
    if (!quiet_table)
      std::cout << fmt::format("  {:<24} {:.3f}x ({})  {}  {}\n", r.change, r.speedup, ci,
                               r.accuracy, r.kept ? "kept" : "not kept: " + r.reason);
    j.push_back({{"change", r.change},
                 {"fixes", r.fixes},
                 {"speedup", r.speedup},
                 {"ci", {r.interval.low, r.interval.high}},
                 {"accuracy", r.accuracy},
                 {"passes_guard", r.passes_guard},
                 {"kept", r.kept},
                 {"reason", r.reason}});
  }
  if (outcomes.empty() && !quiet_table) std::cout << "  none applies to this model\n";
  if (any) {
    write_rewritten_model(o.bench, outcomes, f.out);
    if (!quiet_table)
      std::cout << "wrote " << f.out << " (the kept rewrites; loadable by torch.jit.load)\n";
  } else if (!quiet_table) {
    std::cout << "no rewrite kept: " << f.out << " not written\n";
  }
  return j;
}

}  // namespace

Runner add_lint_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "lint",
      "Find performance anti-patterns in a TorchScript model's graph, each with where it "
      "is, the evidence and the fix");
  auto f = std::make_shared<LintFlags>();
  cmd->add_option("model", f->model, "TorchScript file (.pt) or builtin:NAME");
  cmd->add_option("--from-python", f->from_python,
                  "MODULE:CALLABLE: trace this nn.Module (importable from here; needs --input) as "
                  "torch.compile would, with torch._dynamo.explain, and report its graph breaks");
  cmd->add_option("--trace-timeout", f->trace_timeout_s,
                  "--from-python: seconds the trace may take before it is stopped")
      ->default_val(600.0);
  cmd->add_option("--fail-on", f->fail_on,
                  "Exit with 3 when a finding is at least this severe: info, warning, error")
      ->default_str("warning");
  cmd->add_option("--device", f->device,
                  "Where the model will run (cpu or cuda): sets how severe host tensors are and "
                  "the size multiple")
      ->default_str("cpu");
  cmd->add_option("--html", f->html, "Also write the findings as an HTML page to this file");
  cmd->add_flag("--json", f->json, "Print the findings as JSON (torchperf.lint/1)");
  cmd->add_flag("--fix", f->fix,
                "Measure each rewrite that applies (conv bias folded, hidden sizes padded, int8 "
                "dynamic) against the model as given, and write the ones that keep the output "
                "and win to --out");
  cmd->add_option("--out", f->out, "--fix: where to write the rewritten TorchScript file");
  cmd->add_flag("--force", f->force, "--fix: replace --out if it exists");
  cmd->add_option("--input", f->inputs, "--fix: input spec per forward argument (as for bench)");
  cmd->add_option("--inputs-file", f->inputs_file, "--fix: tensors saved with torch.save");
  cmd->add_option("--config", f->config,
                  "--fix: the configuration both sides run under (default careful = eval+no_grad)")
      ->default_str("careful");
  cmd->add_option(
      "--accuracy", f->accuracy,
      "--fix: the guard a rewrite's output must pass (default "
      "cosine>=0.999,top1>=99%,max_rel<=10%)");
  cmd->add_option("--time", f->time_s, "--fix: seconds per head-to-head comparison")
      ->default_val(3);
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    const Severity fail_on = parse_severity(f->fail_on);
    if (!f->fix && (!f->out.empty() || f->force))
      throw UsageError("--out and --force belong to --fix");
    if (f->device != "cpu" && f->device != "cuda")
      throw UsageError("--device '" + f->device + "': expected cpu or cuda");
    if (!f->from_python.empty()) {
      LintReport report;
      report.model = f->from_python;
      report.findings = python_source_findings(*f);
      for (auto& p : lint_process()) report.findings.push_back(std::move(p));
      if (!f->html.empty()) write_text_file(f->html, render_lint_html(report));
      if (f->json)
        std::cout << to_json(report).dump(2) << "\n";
      else
        std::cout << format_lint(report);
      return report.count_at_least(fail_on) > 0 ? kLintFindings : kSuccess;
    }
    if (f->model.empty())
      throw UsageError("lint: expected a model (a TorchScript file or builtin:NAME) or "
                       "--from-python MODULE:CALLABLE");
    auto model = open_model(f->model)->load();
    TorchScriptModel* script = model->as_torchscript();
    if (model->as_exported())
      throw ModelError("model '" + f->model + "': lint reads TorchScript graphs; a torch.export "
                       "program is compiled by AOTInductor, which applies these rewrites itself "
                       "(bench and tune run it: --graph aoti); for its graph breaks, lint the "
                       "module it came from with --from-python MODULE:CALLABLE");
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
    if (std::any_of(report.findings.begin(), report.findings.end(),
                    [](const Finding& x) { return x.rule == "size-multiple"; }))
      report.vector_evidence = preferred_multiple(context).evidence;
    if (!f->html.empty()) write_text_file(f->html, render_lint_html(report));
    nlohmann::json j = to_json(report);
    if (!f->json) std::cout << format_lint(report);
    if (f->fix) j["rewrites"] = fix(*f, f->json);
    if (f->json) std::cout << j.dump(2) << "\n";
    return report.count_at_least(fail_on) > 0 ? kLintFindings : kSuccess;
  };
}

}  // namespace torchperf::cli
