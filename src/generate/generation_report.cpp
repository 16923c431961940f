#include "torchperf/generate/generation_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "torchperf/analysis/pareto.h"
#include "torchperf/page/html_page.h"
#include "torchperf/page/text_table.h"
#include "torchperf/report/table_writer.h"

namespace torchperf {

namespace {

// The knobs a point changed from the registry's baselines (HF generate's defaults), or what it is
// when it changed none; threads are said apart.
std::string changed(const GenerationSettings& s) {
  const GenerationSettings defaults = baseline_settings(GenerationTraits{});
  std::vector<std::string> parts;
  for (const auto& knob : generation_knobs()) {
    const auto it = s.find(knob.name);
    if (it == s.end() || knob.name == "threads") continue;
    if (defaults.at(knob.name) != it->second) parts.push_back(knob.name + "=" + it->second);
  }
  const std::string threads = s.count("threads") ? " (" + s.at("threads") + " threads)" : "";
  return (parts.empty() ? std::string("HF generate, eager fp32") : fmt::format("{}", fmt::join(parts, " ")))
         + threads;
}

std::string ms(double seconds) { return fmt::format("{:.1f}", seconds * 1e3); }

std::string rate(const Summary& s) {
  if (std::isnan(s.median_ci.low)) return fmt::format("{:.1f}", s.median);
  return fmt::format("{:.1f} ({:.1f}-{:.1f})", s.median, s.median_ci.low, s.median_ci.high);
}

std::string guard_cell(const GenerationPoint& p) {
  if (!p.figures.guard) return "-";
  const auto& g = *p.figures.guard;
  return fmt::format("tokens {:.0f}% same, prefill cos {:.4f}", g.token_agreement * 100,
                     g.prefill.cosine);
}

TextTable points_table(const GenerationTuneResult& r) {
  std::vector<std::size_t> order(r.points.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& pa = r.points[a];
    const auto& pb = r.points[b];
    if (pa.batch != pb.batch) return pa.batch < pb.batch;
    if (pa.measured != pb.measured) return pa.measured;
    return pa.figures.decode_tokens_per_s.median > pb.figures.decode_tokens_per_s.median;
  });
  TextTable t;
  t.header = {"batch", "configuration", "decode tok/s (95% CI)", "TTFT ms", "TPOT ms",
              "ITL p99 ms", "e2e tok/s", "GB/s", "peak", "setup s", "guard"};
  for (auto i : order) {
    const auto& p = r.points[i];
    const std::string mark = r.winner && *r.winner == i ? " *" : "";
    if (!p.measured) {
      t.rows.push_back({std::to_string(p.batch), changed(p.settings) + mark, "failed: " + p.error,
                        "", "", "", "", "", "", "", ""});
      continue;
    }
    const auto& f = p.figures;
    t.rows.push_back({std::to_string(p.batch), changed(p.settings) + mark,
                      rate(f.decode_tokens_per_s), ms(f.ttft_s.median), ms(f.tpot_s.median),
                      ms(f.itl_s.p99), fmt::format("{:.1f}", f.end_to_end_tokens_per_s.median),
                      fmt::format("{:.2f}", f.achieved_gb_per_s), format_bytes(f.peak_bytes),
                      fmt::format("{:.1f}", f.setup_s()),
                      p.guard_failure ? "REFUSED: " + *p.guard_failure : guard_cell(p)});
  }
  return t;
}

}  // namespace

std::string format_generation_result(const GenerationTuneResult& r) {
  const TextTable t = points_table(r);
  std::string out = t.render(TextFormat::kTerminal);
  if (r.winner) {
    const auto& w = r.points[*r.winner];
    out += fmt::format("\nwinner (*): batch {}, {}: {:.1f} decode tokens/s, TTFT {} ms, TPOT {} ms",
                       w.batch, changed(w.settings), w.figures.decode_tokens_per_s.median,
                       ms(w.figures.ttft_s.median), ms(w.figures.tpot_s.median));
    if (r.baseline) {
      const auto& b = r.points[*r.baseline];
      for (const auto& p : r.points)
        if (p.measured && p.batch == w.batch && p.settings == b.settings)
          out += fmt::format(" ({:.2f}x HF generate eager fp32 at batch {})",
                             w.figures.decode_tokens_per_s.median /
                                 p.figures.decode_tokens_per_s.median,
                             w.batch);
    }
    if (!w.figures.code.empty()) out += "\n\nIn your program (transformers):\n" + w.figures.code;
  } else {
    out += "\nno point passed the guard and the objective: no winner\n";
  }
  for (const auto& note : r.notes) out += "note: " + note + "\n";
  return out;
}

nlohmann::json generation_result_json(const GenerationTuneResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    auto j = to_json(p);
    j["label"] = p.label();
    points.push_back(j);
  }
  nlohmann::json j = {{"kind", "generation-tune"}, {"points", points}, {"notes", r.notes},
                      {"wall_s", r.wall_s}};
  j["model"] = nlohmann::json::parse(r.model.empty() ? "null" : r.model);
  if (r.winner) {
    j["winner"] = *r.winner;
    j["snippet"] = r.points[*r.winner].figures.code;
  }
  if (r.baseline) j["baseline"] = *r.baseline;
  return j;
}

std::vector<std::size_t> generation_front(const GenerationTuneResult& r) {
  std::vector<ParetoInput> in;
  for (const auto& p : r.points) {
    const bool ok = p.valid();
    in.push_back({ok ? p.figures.ttft_s.median : std::nan(""),
                  ok ? p.figures.decode_tokens_per_s.median : std::nan("")});
  }
  return pareto_front(in, /*maximize_x=*/false, /*maximize_y=*/true);
}

std::string generation_page(const GenerationTuneResult& r, const std::string& model) {
  const auto front = generation_front(r);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    if (!p.measured) continue;
    rows.push_back({{"configuration", changed(p.settings)},
                    {"batch", std::to_string(p.batch)},
                    {"decode", p.figures.decode_tokens_per_s.median},
                    {"ttft_ms", p.figures.ttft_s.median * 1e3},
                    {"tpot_ms", p.figures.tpot_s.median * 1e3},
                    {"front", std::find(front.begin(), front.end(), i) != front.end()},
                    {"status", r.winner && *r.winner == i ? "winner"
                               : p.valid()                ? "ok"
                                                          : "refused by the guard"}});
  }
  const nlohmann::json x = {{"field", "ttft_ms"}, {"type", "quantitative"},
                            {"title", "time to first token (ms, log)"},
                            {"scale", {{"type", "log"}, {"nice", false}, {"padding", 8}}}};
  const nlohmann::json y = {{"field", "decode"}, {"type", "quantitative"},
                            {"title", "decode tokens/s (log)"},
                            {"scale", {{"type", "log"}, {"nice", false}, {"padding", 8}}}};
  nlohmann::json layer = nlohmann::json::array();
  layer.push_back({{"mark", {{"type", "line"}, {"color", "#c62828"}, {"interpolate", "step-after"}}},
                   {"transform", nlohmann::json::array({{{"filter", "datum.front"}}})},
                   {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "ttft_ms"}}}}}});
  layer.push_back(
      {{"mark", {{"type", "point"}, {"filled", true}}},
       {"encoding",
        {{"x", x},
         {"y", y},
         {"color", {{"field", "batch"}, {"type", "nominal"}, {"title", "batch"}}},
         {"shape", {{"field", "status"}, {"type", "nominal"},
                    {"scale", {{"domain", {"ok", "winner", "refused by the guard"}},
                               {"range", {"circle", "diamond", "cross"}}}}}},
         {"size", {{"condition", {{"test", "datum.front"}, {"value", 140}}}, {"value", 50}}},
         {"tooltip", nlohmann::json::array({{{"field", "configuration"}},
                                            {{"field", "batch"}},
                                            {{"field", "decode"}, {"format", ".1f"}},
                                            {{"field", "ttft_ms"}, {"format", ".1f"}},
                                            {{"field", "tpot_ms"}, {"format", ".2f"}},
                                            {{"field", "status"}}})}}}});
  Panel panel;
  panel.id = "generation-front";
  panel.title = "decode tokens/s against time to first token";
  panel.caption = "Red: the Pareto front, configurations no other beats on both at once; the "
                  "diamond is the winner, crosses were refused by the guard.";
  panel.spec = {{"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
                {"data", {{"values", rows}}},
                {"width", 420},
                {"height", 260},
                {"layer", layer}};
  panel.expected_marks["symbol"] = static_cast<int>(rows.size());
  panel.expected_marks["line"] = static_cast<int>(front.size());  // a line's items: its points
  HtmlPage page;
  page.title = "torchperf generation report: " + model;
  page.header_lines = {fmt::format("{} points measured in {:.0f} s", rows.size(), r.wall_s)};
  std::string before = html_table(points_table(r));
  if (r.winner && !r.points[*r.winner].figures.code.empty())
    before += "<h2>The winner in your program</h2><pre>" +
              html_escape(r.points[*r.winner].figures.code) + "</pre>";
  for (const auto& note : r.notes) before += "<p>note: " + html_escape(note) + "</p>";
  page.body_before_plots = before;
  page.panels.push_back(std::move(panel));
  return render_page(page);
}

}  // namespace torchperf
