#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "exit_codes.h"
#include "report_files.h"
#include "torchperf/analysis/run_analysis.h"
#include "torchperf/error.h"
#include "torchperf/report/analysis_text.h"
#include "torchperf/report/apply_snippets.h"
#include "torchperf/report/html_report.h"
#include "torchperf/report/points_csv.h"

namespace torchperf::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> runs;
  std::string html, md, csv, config;
  CLI::Option *html_opt = nullptr, *md_opt = nullptr, *csv_opt = nullptr;
  bool json = false;
};

// Where an output goes: the FILE given, "-" for stdout, or next to the (first) run's results.
std::string destination(const CLI::Option* opt, const std::string& value, const RunAnalysis& first,
                        const std::string& default_name) {
  if (!opt->count()) return "";
  // The FILE is optional, so `--html runs/a runs/b` would take the first run for it.
  if (!value.empty() && value != "-" &&
      (std::filesystem::is_directory(value) ||
       std::filesystem::path(value).filename() == "results.jsonl"))
    throw UsageError(opt->get_name() + " takes a FILE to write, got the run '" + value +
                     "': put the runs before " + opt->get_name() + " or give it a file name");
  if (!value.empty()) return value;
  return (std::filesystem::path(first.run.journal).parent_path() / default_name).string();
}

int run(const ReportFlags& f) {
  std::vector<RunAnalysis> analyses;
  for (const auto& path : f.runs) {
    analyses.push_back(analyze(load_run(path)));
    if (const auto pid = analyses.back().run.running_pid)
      std::cerr << "report: " << path << " is still being written by tune (PID " << *pid
                << "): this report shows the results so far\n";
  }
  // Distinct labels: two runs in directories of the same name are told apart by their position.
  for (std::size_t i = 0; i < analyses.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (analyses[i].run.label == analyses[j].run.label)
        analyses[i].run.label += " (" + std::to_string(i + 1) + ")";

  const RunAnalysis& first = analyses.front();
  const std::string html = destination(f.html_opt, f.html, first, "report.html");
  const std::string md = destination(f.md_opt, f.md, first, "report.md");
  const std::string csv = destination(f.csv_opt, f.csv, first, "points.csv");
  if ((md == "-") + (csv == "-") + (html == "-") + f.json > 1)
    throw UsageError(
        "only one output can go to standard output ('-' or --json): give the others "
        "a FILE");
  if (!f.config.empty() && !first.winner)
    throw UsageError("--config: run '" + first.run.label + "' has no winner to save");
  bool printed = false;
  const auto emit = [&](const std::string& where, const std::string& text, const char* what) {
    if (where.empty()) return;
    if (where == "-") {
      std::cout << text;
      printed = true;
      return;
    }
    write_text_file(where, text);
    std::cerr << "report: " << what << " written to " << where << "\n";
  };
  emit(html, html.empty() ? "" : render_html(analyses), "HTML page");
  emit(md, md.empty() ? "" : format_report(analyses, TextFormat::kMarkdown), "Markdown");
  emit(csv, csv.empty() ? "" : points_csv(analyses), "CSV of every point");
  if (!f.config.empty()) {
    write_text_file(f.config, make_apply_snippets(first).config_json + "\n");
    std::cerr << "report: the winner's configuration written to " << f.config
              << " (torchperf bench --config " << f.config << ")\n";
  }
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : analyses) out.push_back(to_json(a));
    std::cout << (analyses.size() == 1 ? out.at(0) : out)
                     .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else if (!printed) {
    std::cout << format_report(analyses, TextFormat::kTerminal);
  }
  return kSuccess;
}

}  // namespace

Runner add_report_command(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Explain tune runs: effects, interactions, Pareto fronts, recommendations, plots");
  cmd->add_option(
         "runs", f->runs,
         "tune output directories (or their results.jsonl); several are shown side by side")
      ->required();
  f->html_opt = cmd->add_option("--html", f->html,
                                "Write the self-contained HTML page to FILE (default: "
                                "RUN/report.html)")
                    ->expected(0, 1);
  f->md_opt = cmd->add_option("--md", f->md,
                              "Write the report as Markdown to FILE ('-': standard output; "
                              "default: RUN/report.md)")
                  ->expected(0, 1);
  f->csv_opt = cmd->add_option("--csv", f->csv,
                               "Write every point as CSV to FILE ('-': standard output; default: "
                               "RUN/points.csv)")
                   ->expected(0, 1);
  cmd->add_option("--config", f->config,
                  "Write the winner's configuration file (for bench --config FILE) to FILE");
  cmd->add_flag("--json", f->json, "Print the analysis as JSON instead of the terminal report");
  return [cmd, f]() -> int {
    if (!cmd->parsed()) return -1;
    return run(*f);
  };
}

}  // namespace torchperf::cli
