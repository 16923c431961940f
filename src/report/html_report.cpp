#include "torchperf/report/html_report.h"

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "torchperf/config/configuration.h"
#include "torchperf/report/analysis_text.h"
#include "torchperf/report/apply_snippets.h"
#include "torchperf/report/vega_specs.h"

namespace torchperf {
namespace {

// A stream of lengths (issue 52): per padding and batching policy, its best point in useful
// tokens/s and the padding it ran; "" when no point ran a stream.
std::string stream_policies(const RunAnalysis& a) {
  struct Best {
    std::size_t index;
    double tokens_per_s;
  };
  std::map<std::pair<std::string, std::string>, Best> best;
  for (std::size_t i : a.measured) {
    const PointResult& p = a.run.points[i];
    if (!std::isfinite(p.metrics.tokens_per_s)) continue;
    const Configuration c = Configuration::parse(p.key);
    const auto policy = std::make_pair(c.get("padding").value_or("batch-max"),
                                       c.get("batching").value_or("arrival"));
    const auto it = best.find(policy);
    if (it == best.end() || p.metrics.tokens_per_s > it->second.tokens_per_s)
      best[policy] = {i, p.metrics.tokens_per_s};
  }
  if (best.empty()) return "";
  std::vector<std::pair<std::pair<std::string, std::string>, Best>> rows(best.begin(), best.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& x, const auto& y) { return x.second.tokens_per_s > y.second.tokens_per_s; });
  std::string out =
      "<h3>Padding and batching over the stream of lengths</h3><p>Each policy's best point, in "
      "useful tokens/s (padding excluded).</p><table class=policies><tr><th>padding</th>"
      "<th>batching</th><th>useful tokens/s</th><th>padding share</th><th>configuration</th></tr>";
  for (const auto& [policy, b] : rows) {
    const PointResult& p = a.run.points[b.index];
    out += "<tr><td><code>" + html_escape(policy.first) + "</code></td><td><code>" +
           html_escape(policy.second) + "</code></td><td>" +
           html_escape(fmt::format("{:.0f}", b.tokens_per_s)) + "</td><td>" +
           html_escape(fmt::format("{:.1f}%", 100 * p.metrics.padding_share)) +
           "</td><td><code>" + html_escape(p.key) + "</code></td></tr>";
  }
  return out + "</table>";
}

// What to do, first: the run, its warnings and the recommendations with their evidence.
std::string run_summary(const RunAnalysis& a) {
  const RunResults& r = a.run;
  std::string out = "<section><h2>" + html_escape(r.label) + " — " + html_escape(r.model) + "</h2>";
  out += "<p>" + std::to_string(r.points.size()) + " points: " + std::to_string(a.measured.size()) +
         " measured, " + std::to_string(a.guarded.size()) + " guarded out, " +
         std::to_string(a.failed.size()) + " failed. Objective " + html_escape(r.objective) +
         "; inputs " + html_escape(r.inputs) + ".</p>";
  if (r.summary && r.summary->contains("search")) {
    // How the budget was spent: which points the search chose, how briefly, how many compared.
    const auto& s = r.summary->at("search");
    const std::string strategy = s.value("strategy", "exhaustive");
    if (strategy == "smart")
      out += "<p>Smart search: " + html_escape(s.value("spent", "")) + " points; " +
             std::to_string(s.value("brief_points", 0)) + " measured briefly (" +
             html_escape(fmt::format("{:.2g}", s.value("brief_time_s", 0.0))) + " s each" +
             (s.value("brief_workers", 0) > 0
                  ? ", in " + std::to_string(s.value("brief_workers", 0)) +
                        " worker processes, each shared by points of one process state"
                  : std::string()) +
             "), " +
             std::to_string(s.value("full_points", 0)) + " in full, then " +
             std::to_string(r.comparisons.size()) +
             " comparisons head to head. Brief points rank candidates; leaders are chosen among "
             "points measured in full.</p>";
    else
      out += "<p>Exhaustive search: every point in full, then " +
             std::to_string(r.comparisons.size()) + " comparisons head to head.</p>";
  }
  if (!r.origin.empty())
    out += "<p>Effects are measured from the origin <code>" + html_escape(r.origin) + "</code>.</p>";
  for (const auto& w : r.warnings) out += "<p class=warn>" + html_escape(w) + "</p>";
  if (!r.packages.empty()) {
    // Compile time apart from run time: each package is paid once, and no point's throughput
    // includes it.
    out += "<h3>AOTInductor compiles</h3><table class=compiles><tr><th>options</th><th>compile "
           "time</th><th>this run</th></tr>";
    for (const auto& [options, p] : r.packages) {
      const std::string failure = p.value("failure", "");
      out += "<tr><td><code>" + html_escape(options) + "</code></td><td>" +
             (failure.empty() ? html_escape(fmt::format("{:.1f} s", p.value("compile_s", 0.0)))
                              : html_escape(failure)) +
             "</td><td>" +
             (failure.empty() ? (p.value("cache_hit", false) ? "from the cache" : "compiled") : "") +
             "</td></tr>";
    }
    out += "</table>";
  }
  if (!a.best_of_runtime.empty()) {
    // The decision a Python user faces: torch.compile in Python, or the model run from C++.
    out += "<h3>Best of each runtime</h3><table class=runtimes><tr><th>runtime</th><th>samples/s</th><th>compile</th><th>configuration</th></tr>";
    for (const auto& [runtime, i] : a.best_of_runtime) {
      const PointResult& p = r.points[i];
      const bool won = a.winner && *a.winner == p.key;
      out += "<tr><td>" + html_escape(runtime) +
             (won ? " (the winner)" : "") + "</td><td>" +
             html_escape(throughput_with_interval(p.metrics)) +
             "</td><td>" + html_escape(fmt::format("{:.1f} s", compile_seconds(p))) +
             "</td><td><code>" + html_escape(p.key) + "</code></td></tr>";
    }
    out += "</table>";
  }
  out += stream_policies(a);
  out += "<h3>Recommendations</h3>";
  for (const auto& rec : a.recommendations)
    out += "<div class=\"rec kind-" + rec.kind + "\"><b>" + html_escape(rec.kind) + "</b>" +
           html_escape(rec.text) + "<div class=evidence>" + html_escape(rec.evidence) + "</div></div>";
  return out + "</section>";
}

// The numbers behind the plots, and the code: after the plots.
std::string run_details(const RunAnalysis& a) {
  const RunResults& r = a.run;
  std::string out = "<section><h2>" + html_escape(r.label) + ": the numbers</h2>";
  const TextTable effects = main_effects_table(a, "×");
  out += "<h3>Main effects</h3>" +
         (effects.rows.empty()
              ? std::string("<p>No two measured points differ in one knob only: no effect to "
                            "show.</p>")
              : html_table(effects));
  out += "<h3>Interactions</h3>";
  if (a.interactions.empty()) {
    out += "<p>No complete quadruple of points (two knobs varied, the rest equal).</p>";
  } else {
    out += "<p>Strongest: " + html_escape(describe_interaction(a.interactions.front())) + "</p>";
    const TextTable t = interactions_table(a, 10, "×");
    out += html_table(t);
  }
  if (!a.guarded.empty() || !a.failed.empty()) {
    TextTable t{{"configuration", "status", "reason"}, {}};
    for (const auto* list : {&a.guarded, &a.failed})
      for (std::size_t i : *list) {
        const auto& p = r.points[i];
        t.rows.push_back({p.key, p.status == PointStatus::kFailed ? "failed (" + p.failure.name() + ")" : "guarded",
                          p.reason});
      }
    out += "<h3>Guarded out and failed</h3>" + html_table(t);
  }
  if (a.winner) {
    const ApplySnippets s = make_apply_snippets(a);
    out += "<h3>Apply the winner</h3><p><code>" + html_escape(*a.winner) + "</code></p>";
    // The winner's own runtime first, open; the other closed below it.
    const std::string cpp = "<summary>C++ (LibTorch)</summary><pre>" + html_escape(s.cpp) + "</pre>";
    const std::string python =
        "<summary>Python (PyTorch)</summary><pre>" + html_escape(s.python) + "</pre>";
    out += "<details open>" + (s.python_first ? python : cpp) + "</details>";
    out += "<details>" + (s.python_first ? cpp : python) + "</details>";
    out += "<details><summary>Configuration file for <code>torchperf bench --config FILE</code></summary><pre>" +
           html_escape(s.config_json) + "</pre></details>";
  }
  return out + "</section>";
}

}  // namespace

namespace {

// The model as its user knows it: the module's class for a tune started from Python (its
// source.json beside the journal), a file's name, or the built-in's; never a temporary path.
std::string model_name(const RunResults& r) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path source = fs::path(r.journal).parent_path() / "source.json";
  if (fs::is_regular_file(source, ec)) {
    std::ifstream in(source);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("model") && j.at("model").is_string())
      return j.at("model").get<std::string>();
  }
  if (r.model.rfind("builtin:", 0) == 0) return r.model;
  return fs::path(r.model).filename().string();
}

}  // namespace

std::string render_html(const std::vector<RunAnalysis>& runs) {
  std::string models;
  for (const auto& a : runs) models += (models.empty() ? "" : ", ") + model_name(a.run);
  HtmlPage page;
  page.title = "torchperf report: " + models;
  for (const auto& a : runs) page.header_lines.push_back(a.run.label + ": " + a.run.journal);
  for (const auto& a : runs) page.body_before_plots += run_summary(a);
  page.panels = report_panels(runs);
  for (const auto& a : runs) page.body_after_plots += run_details(a);
  return render_page(page);
}

}  // namespace torchperf
