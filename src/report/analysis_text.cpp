#include "torchperf/report/analysis_text.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "torchperf/json_fields.h"
#include "torchperf/report/apply_snippets.h"
#include "torchperf/report/table_writer.h"
#include "torchperf/page/text_table.h"

namespace torchperf {
namespace {

constexpr std::size_t kInteractionRows = 10;

std::string heading(const std::string& title, TextFormat format) {
  return format == TextFormat::kMarkdown ? "\n### " + title + "\n\n" : "\n" + title + "\n";
}

std::string ci_text(const EffectEstimate& e) {
  if (!e.has_interval()) return "n/a";
  return fmt::format("{:.3f}-{:.3f}", e.low, e.high);
}

std::string machine(const nlohmann::json& env) {
  if (!env.is_object()) return "unknown machine";
  // Journals from before torch_build named the BLAS alone.
  const std::string blas = env.contains("torch_build") ? string_field(env.at("torch_build"), "summary")
                           : env.contains("blas")      ? string_field(env.at("blas"), "kind")
                                                       : "";
  std::string text = fmt::format("{}, {} usable cores, LibTorch {}",
                                 string_field(env, "cpu_model", "?"),
                                 integer_field(env, "usable_cores"),
                                 string_field(env, "torch_version", "?"));
  if (!blas.empty()) text += " (" + blas + ")";
  const nlohmann::json gpus = env.contains("gpu_names") ? env.at("gpu_names") : nlohmann::json();
  if (gpus.is_array() && !gpus.empty() && gpus.at(0).is_string())
    text += ", " + gpus.at(0).get<std::string>();
  return text;
}

std::string point_value(const PointResult& p) {
  if (!std::isfinite(p.metrics.throughput)) return "n/a";
  return fmt::format("{:.2f}/s", p.metrics.throughput);
}

// Where the results are, the machine, the points and axes, compiles paid once.
void run_header(std::string& out, const RunAnalysis& a, TextFormat format) {
  const RunResults& r = a.run;
  const bool md = format == TextFormat::kMarkdown;
  const auto code = [&](const std::string& s) { return md ? "`" + s + "`" : s; };
  out += md ? fmt::format("## {} — {}\n\n", r.label, r.model)
            : fmt::format("report {}  model {}  inputs {}\n", r.label, r.model, r.inputs);
  const auto line = [&](const std::string& label, const std::string& text) {
    out += md ? fmt::format("- **{}**: {}\n", label, text) : fmt::format("  {:<9}{}\n", label, text);
  };
  line("results", code(r.journal));
  line("machine", machine(r.environment));
  line("points", fmt::format("{} run: {} measured, {} guarded out, {} failed; objective {}",
                             r.points.size(), a.measured.size(), a.guarded.size(), a.failed.size(),
                             r.objective));
  std::string axes;
  for (const auto& [knob, values] : r.axes) {
    std::string v;
    for (const auto& x : values) v += (v.empty() ? "" : ",") + x;
    axes += (axes.empty() ? "" : "  ") + knob + "=" + v;
  }
  line("axes", axes);
  if (!r.origin.empty()) line("origin", code(r.origin) + " (effects are measured from its values)");
  for (const auto& w : r.warnings) line("warning", w);
  for (const auto& [options, p] : r.packages)
    line("compile", p.value("failure", "").empty()
                        ? fmt::format("AOTInductor {}: {:.1f} s, paid once ({}); no point's run "
                                      "time includes it",
                                      options, p.value("compile_s", 0.0),
                                      p.value("cache_hit", false) ? "from the cache" : "compiled")
                        : "AOTInductor " + options + ": " + p.value("failure", ""));
}

// What to do, and what each knob did alone.
void recommendations_and_effects(std::string& out, const RunAnalysis& a, TextFormat format) {
  const RunResults& r = a.run;
  const bool md = format == TextFormat::kMarkdown;
  out += heading("Recommendations", format);
  for (const auto& rec : a.recommendations) {
    if (md)
      out += fmt::format("- **{}** — {}\n", escape_md(rec.text), escape_md(rec.evidence));
    else
      out += fmt::format("  {}\n      {}\n", rec.text, rec.evidence);
  }

  out += heading("Main effects: " + (r.objective.empty() ? std::string("score") : r.objective) +
                     " ratio against the origin's value, geometric mean over pairs of points that "
                     "differ only in that knob",
                 format);
  const TextTable effects = main_effects_table(a, "x");
  out += effects.rows.empty() ? "  no pair of points differs in one knob only\n"
                              : effects.render(format);
}

// How much one knob's effect changes with another.
void interactions_text(std::string& out, const RunAnalysis& a, TextFormat format) {
  const bool md = format == TextFormat::kMarkdown;
  out += heading("Interactions: how much one knob's effect changes with another (ratio of ratios)",
                 format);
  if (a.interactions.empty()) {
    out += "  no complete quadruple of points (two knobs varied, the rest equal)\n";
  } else {
    const Interaction& top = a.interactions.front();
    out += (md ? "Strongest: " : "  strongest: ") + describe_interaction(top) +
           (top.estimate.significant() ? "" : " — not significant: no interaction stands out") +
           "\n" + (md ? "\n" : "");
    const TextTable t = interactions_table(a, kInteractionRows, "x");
    out += t.render(format);
    if (a.interactions.size() > kInteractionRows)
      out += fmt::format("{}… {} more in --json and the HTML page\n", md ? "\n" : "  ",
                         a.interactions.size() - kInteractionRows);
  }
}

// The points no other beats on both axes.
void pareto_text(std::string& out, const RunAnalysis& a, TextFormat format) {
  const RunResults& r = a.run;
  const bool md = format == TextFormat::kMarkdown;
  out += heading("Pareto fronts (points no other point beats on both axes)", format);
  std::map<std::string, const PointResult*> by_key;
  for (const auto& p : r.points) by_key[p.key] = &p;
  for (const auto& f : a.fronts) {
    out += md ? fmt::format("- throughput vs {}:\n", f.x_label)
              : fmt::format("  throughput vs {}\n", f.x_label);
    for (const auto& key : f.keys) {
      const PointResult& p = *by_key.at(key);
      std::string x;
      if (f.name == "throughput-p99") x = fmt::format("p99 {:.2f} ms", p.metrics.latency_p99_ms);
      if (f.name == "throughput-memory") x = "peak " + format_bytes(p.metrics.peak_memory_bytes);
      if (f.name == "throughput-accuracy") x = fmt::format("cosine {:.6f}", p.metrics.cosine);
      out += md ? fmt::format("  - {} {}: `{}`{}\n", point_value(p), x, key,
                              p.status == PointStatus::kGuarded ? " (guarded out)" : "")
                : fmt::format("    {:>12}  {:<18} {}{}\n", point_value(p), x, key,
                              p.status == PointStatus::kGuarded ? "  (guarded out)" : "");
    }
  }
}

// Points guarded out or failed, each with its reason.
void guarded_and_failed_text(std::string& out, const RunAnalysis& a, TextFormat format) {
  const RunResults& r = a.run;
  const bool md = format == TextFormat::kMarkdown;
  if (!a.guarded.empty() || !a.failed.empty()) {
    out += heading("Guarded out and failed points", format);
    for (const auto* list : {&a.guarded, &a.failed})
      for (std::size_t i : *list) {
        const auto& p = r.points[i];
        const std::string what = p.status == PointStatus::kFailed ? "failed (" + p.failure.name() + ")" : "guarded";
        out += md ? fmt::format("- `{}` — {}: {}\n", p.key, what, escape_md(p.reason))
                  : fmt::format("  {}\n      {}: {}\n", p.key, what, p.reason);
      }
  }
}

// The winner's configuration, and how to measure it again or take its code.
void apply_text(std::string& out, const RunAnalysis& a, TextFormat format) {
  const RunResults& r = a.run;
  const bool md = format == TextFormat::kMarkdown;
  if (a.winner) {
    const ApplySnippets s = make_apply_snippets(a);
    out += heading("Apply the winner", format);
    if (md) {
      out += "C++ (LibTorch):\n\n```cpp\n" + s.cpp + "```\n\nPython (PyTorch):\n\n```python\n" +
             s.python + "```\n\nConfiguration file (`torchperf bench --config FILE`):\n\n```json\n" +
             s.config_json + "\n```\n";
    } else {
      out += "  configuration  " + *a.winner + "\n";
      // The configuration file carries the model, inputs and device too: a file model needs them.
      const std::string file =
          (std::filesystem::path(r.journal).parent_path() / "winner.json").string();
      if (std::filesystem::exists(file))
        out += "  measure again  torchperf bench --config " + file + "\n";
      else
        out += "  measure again  torchperf report " + r.label +
               " --config winner.json, then torchperf bench --config winner.json\n";
      out += "  code           C++ and Python snippets and a config file: --md, --html, --config FILE\n";
    }
  }
}

void one_run(std::string& out, const RunAnalysis& a, TextFormat format) {
  run_header(out, a, format);
  recommendations_and_effects(out, a, format);
  interactions_text(out, a, format);
  pareto_text(out, a, format);
  guarded_and_failed_text(out, a, format);
  apply_text(out, a, format);
}

void side_by_side(std::string& out, const std::vector<RunAnalysis>& runs, TextFormat format) {
  out += heading("Side by side: main effects (ratio against each run's origin value)", format);
  TextTable t{{"knob", "value"}, {}};
  for (const auto& a : runs) t.header.push_back(a.run.label);
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::map<std::size_t, EffectEstimate>> cells;
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& k : runs[i].effects)
      for (const auto& e : k.effects) {
        const auto id = std::make_pair(k.knob, e.value);
        if (!cells.count(id)) order.push_back(id);
        cells[id][i] = e.estimate;
      }
  for (const auto& id : order) {
    std::vector<std::string> row{id.first, id.second};
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto it = cells[id].find(i);
      row.push_back(it == cells[id].end()
                        ? "-"
                        : fmt::format("{:.3f}x{}", it->second.ratio,
                                      it->second.significant() ? "" : " (n.s.)"));
    }
    t.rows.push_back(row);
  }
  out += t.render(format);
  TextTable w{{"run", "model", "machine", "winner"}, {}};
  for (const auto& a : runs)
    w.rows.push_back({a.run.label, a.run.model, machine(a.run.environment),
                      a.winner ? *a.winner : "none"});
  out += heading("Side by side: winners", format);
  out += w.render(format);
}

}  // namespace

std::string verdict(const EffectEstimate& e) {
  if (e.negligible()) return "negligible (within 3%)";
  if (e.significant()) return e.ratio > 1 ? "helps" : "hurts";
  return e.has_interval() ? "no clear effect" : "too few pairs";
}

TextTable main_effects_table(const RunAnalysis& a, const std::string& times) {
  TextTable t{{"rank", "knob", "value", "against", "ratio", "95% CI", "pairs", "verdict"}, {}};
  int rank = 0;
  for (const auto& k : a.effects) {
    ++rank;
    for (const auto& e : k.effects)
      t.rows.push_back(
          {std::to_string(rank), k.knob, e.value, e.reference,
           fmt::format("{:.3f}{}", e.estimate.ratio, times), ci_text(e.estimate),
           std::to_string(e.estimate.pairs),
           verdict(e.estimate)});
  }
  return t;
}

TextTable interactions_table(const RunAnalysis& a, std::size_t rows, const std::string& times) {
  TextTable t{{"knob A", "knob B", "A's effect at B's origin", "at B", "ratio of ratios", "95% CI",
               "quadruples"},
              {}};
  for (std::size_t i = 0; i < std::min(rows, a.interactions.size()); ++i) {
    const auto& x = a.interactions[i];
    t.rows.push_back({x.knob_a + "=" + x.value_a, x.knob_b + "=" + x.value_b,
                      fmt::format("{:.3f}{}", x.a_at_reference_b.ratio, times),
                      fmt::format("{:.3f}{}", x.a_at_value_b.ratio, times),
                      fmt::format("{:.3f}{}", x.estimate.ratio, times), ci_text(x.estimate),
                      std::to_string(x.estimate.pairs)});
  }
  return t;
}

std::string format_report(const std::vector<RunAnalysis>& runs, TextFormat format) {
  std::string out;
  if (format == TextFormat::kMarkdown) out += "# torchperf report\n\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) out += "\n";
    one_run(out, runs[i], format);
  }
  if (runs.size() > 1) side_by_side(out, runs, format);
  return out;
}

}  // namespace torchperf
