#include "torchperf/report/vega_specs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "torchperf/report/analysis_text.h"
#include "torchperf/json_fields.h"

namespace torchperf {
namespace {

using json = nlohmann::json;

constexpr const char* kSchema = "https://vega.github.io/schema/vega-lite/v6.json";


// One row per measured point of every run: what the scatter and Pareto panels plot.
json point_rows(const std::vector<RunAnalysis>& runs, const std::vector<std::string>& knobs) {
  json rows = json::array();
  for (const auto& a : runs) {
    std::vector<std::size_t> order = a.measured;
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      return a.run.points[x].metrics.throughput > a.run.points[y].metrics.throughput;
    });
    std::map<std::string, std::set<std::string>> on_front;
    for (const auto& f : a.fronts) on_front[f.name].insert(f.keys.begin(), f.keys.end());
    int rank = 0;
    for (std::size_t i : order) {
      const PointResult& p = a.run.points[i];
      const PointMetrics& m = p.metrics;
      json row = {{"run", a.run.label},
                  {"rank", ++rank},
                  {"key", p.key},
                  {"status", p.status},
                  {"throughput", nullable(m.throughput)},
                  {"low", nullable(m.throughput_low)},
                  {"high", nullable(m.throughput_high)},
                  {"p50_ms", nullable(m.latency_p50_ms)},
                  {"p99_ms", nullable(m.latency_p99_ms)},
                  {"memory_mib", static_cast<double>(m.peak_memory_bytes) / (1024.0 * 1024.0)},
                  {"cosine", nullable(m.cosine)},
                  {"error", std::isfinite(m.cosine) ? json(std::max(0.0, 1 - m.cosine)) : json(nullptr)},
                  {"front_p99", on_front["throughput-p99"].count(p.key) > 0},
                  {"front_memory", on_front["throughput-memory"].count(p.key) > 0},
                  {"front_accuracy", on_front["throughput-accuracy"].count(p.key) > 0},
                  {"compile_s", compile_seconds(p)},
                  {"front_compile", on_front["throughput-compile"].count(p.key) > 0}};
      for (const auto& k : knobs) row[k] = knob_value(p.key, k);
      rows.push_back(row);
    }
  }
  return rows;
}

json tooltip(const std::vector<std::string>& extra = {}) {
  json t = json::array({{{"field", "key"}, {"title", "configuration"}},
                        {{"field", "throughput"}, {"title", "samples/s"}, {"format", ".2f"}},
                        {{"field", "p99_ms"}, {"title", "p99 ms"}, {"format", ".3f"}},
                        {{"field", "memory_mib"}, {"title", "peak MiB"}, {"format", ".1f"}},
                        {{"field", "cosine"}, {"title", "cosine vs fp32"}, {"format", ".6f"}},
                        {{"field", "status"}}});
  for (const auto& f : extra) t.push_back({{"field", f}});
  return t;
}

// Wraps a unit or layer spec: faceted by run when there are several.
json finish(json spec, const json& data, std::size_t runs, const std::string& title) {
  json out = {{"$schema", kSchema}, {"title", title}, {"data", {{"values", data}}}};
  if (runs > 1) {
    out["facet"] = {{"field", "run"}, {"type", "nominal"}, {"title", nullptr}};
    out["columns"] = 2;
    out["resolve"] = {{"scale", {{"y", "independent"}, {"x", "independent"}}}};
    out["spec"] = std::move(spec);
  } else {
    for (auto& [k, v] : spec.items()) out[k] = v;
  }
  return out;
}

json sized(json spec, json width, json height) {
  spec["width"] = width;
  spec["height"] = height;
  return spec;
}

Panel scatter_panel(const std::string& knob, const json& rows, std::size_t runs) {
  // Ranks are whole numbers: no tick between two experiments.
  const json x = {{"field", "rank"}, {"type", "quantitative"}, {"title", "experiment, fastest first"},
                  {"axis", {{"tickMinStep", 1}, {"format", "d"}}}};
  const json y = {{"field", "throughput"}, {"type", "quantitative"},
                  {"scale", {{"type", "log"}, {"nice", false}, {"padding", 8}}},
                  {"title", "throughput (samples/s, log)"}};
  json layer = json::array();
  layer.push_back({{"mark", {{"type", "rule"}, {"opacity", 0.35}}},
                   {"transform", json::array({{{"filter", "isValid(datum.low) && isValid(datum.high)"}}})},
                   {"encoding", {{"x", x}, {"y", {{"field", "low"}, {"type", "quantitative"}}},
                                 {"y2", {{"field", "high"}}}, {"color", {{"field", knob}, {"type", "nominal"}}}}}});
  layer.push_back({{"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
                   {"encoding",
                    {{"x", x},
                     {"y", y},
                     {"color", {{"field", knob}, {"type", "nominal"}, {"title", knob},
                                {"scale", {{"scheme", "tableau10"}}}}},
                     {"shape", {{"field", "status"}, {"type", "nominal"},
                                {"scale", {{"domain", {"ok", "guarded"}}, {"range", {"circle", "cross"}}}}}},
                     {"tooltip", tooltip({knob})}}}});
  Panel p;
  p.id = "scatter-" + knob;
  p.title = "throughput of every experiment, coloured by " + knob;
  p.caption = "Each dot is one configuration, fastest on the left; the colour is its " + knob +
              " value, the bar its 95% interval, a cross a point guarded out on accuracy.";
  p.spec = finish(sized({{"layer", layer}}, 320, 200), rows, runs, p.title);
  p.expected_marks["symbol"] = static_cast<int>(rows.size());
  return p;
}

Panel effects_panel(const std::vector<RunAnalysis>& runs) {
  json rows = json::array();
  for (const auto& a : runs)
    for (const auto& k : a.effects)
      for (const auto& e : k.effects)
        rows.push_back({{"run", a.run.label},
                        {"effect", k.knob + "=" + e.value},
                        {"against", k.knob + "=" + e.reference},
                        {"ratio", e.estimate.ratio},
                        {"low", nullable(e.estimate.low)},
                        {"high", nullable(e.estimate.high)},
                        {"pairs", e.estimate.pairs},
                        {"verdict", verdict(e.estimate)}});
  const json y = {{"field", "effect"}, {"type", "nominal"}, {"title", nullptr},
                  {"sort", {{"field", "ratio"}, {"order", "descending"}}}};
  const json x_scale = {{"type", "log"}, {"nice", false}, {"padding", 12}};
  json layer = json::array();
  layer.push_back({{"mark", {{"type", "bar"}, {"height", 14}}},
                   {"encoding",
                    {{"y", y},
                     {"x", {{"field", "ratio"}, {"type", "quantitative"}, {"scale", x_scale},
                            {"title", "ratio against the origin's value (log)"}}},
                     {"x2", {{"datum", 1}}},
                     {"color", {{"field", "verdict"}, {"type", "nominal"},
                                {"scale", {{"domain", {"helps", "hurts", "negligible (within 3%)",
                                                       "no clear effect", "too few pairs"}},
                                           {"range", {"#2e7d32", "#c62828", "#bdbdbd", "#9e9e9e",
                                                      "#e0e0e0"}}}}}},
                     {"tooltip", json::array({{{"field", "effect"}}, {{"field", "against"}},
                                              {{"field", "ratio"}, {"format", ".3f"}},
                                              {{"field", "low"}, {"format", ".3f"}},
                                              {{"field", "high"}, {"format", ".3f"}},
                                              {{"field", "pairs"}}, {{"field", "verdict"}}})}}}});
  layer.push_back({{"mark", {{"type", "rule"}, {"color", "black"}}},
                   {"transform", json::array({{{"filter", "isValid(datum.low) && isValid(datum.high)"}}})},
                   {"encoding", {{"y", y}, {"x", {{"field", "low"}, {"type", "quantitative"}}},
                                 {"x2", {{"field", "high"}}}}}});
  layer.push_back({{"mark", {{"type", "rule"}, {"strokeDash", {4, 3}}}},
                   {"encoding", {{"x", {{"datum", 1}}}}}});
  Panel p;
  p.id = "effects";
  p.title = "main effects: ratio over pairs differing in one knob, with 95% intervals";
  p.caption = "Each bar is a knob value's geometric-mean ratio against the origin's value of that "
              "knob, over every pair of points that differ only in it; the black line is its 95% "
              "interval.";
  p.spec = finish(sized({{"layer", layer}}, 420, {{"step", 20}}), rows, runs.size(), p.title);
  p.expected_marks["rect"] = static_cast<int>(rows.size());
  return p;
}

Panel interactions_panel(const std::vector<RunAnalysis>& runs) {
  // Both halves of the (symmetric) matrix, so that each knob value reads along its row and column.
  json rows = json::array();
  for (const auto& a : runs)
    for (const auto& i : a.interactions)
      for (const bool mirrored : {false, true})
      rows.push_back({{"run", a.run.label},
                      {"a", mirrored ? i.knob_b + "=" + i.value_b : i.knob_a + "=" + i.value_a},
                      {"b", mirrored ? i.knob_a + "=" + i.value_a : i.knob_b + "=" + i.value_b},
                      {"ratio", i.estimate.ratio},
                      {"log2", std::log2(i.estimate.ratio)},
                      {"low", nullable(i.estimate.low)},
                      {"high", nullable(i.estimate.high)},
                      {"quadruples", i.estimate.pairs},
                      {"significant", i.estimate.significant()},
                      {"label", fmt::format("{:.2f}{}", i.estimate.ratio, i.estimate.significant() ? "*" : "")},
                      {"words", describe_interaction(i)}});
  const json enc_xy = {{"x", {{"field", "a"}, {"type", "nominal"}, {"title", nullptr}}},
                       {"y", {{"field", "b"}, {"type", "nominal"}, {"title", nullptr}}}};
  json rect_enc = enc_xy;
  rect_enc["color"] = {{"field", "log2"}, {"type", "quantitative"}, {"title", "log2 ratio of ratios"},
                       {"scale", {{"scheme", "blueorange"}, {"domainMid", 0}}}};
  rect_enc["tooltip"] = json::array({{{"field", "words"}, {"title", "in words"}},
                                     {{"field", "ratio"}, {"format", ".3f"}},
                                     {{"field", "low"}, {"format", ".3f"}},
                                     {{"field", "high"}, {"format", ".3f"}},
                                     {{"field", "quadruples"}}});
  json text_enc = enc_xy;
  text_enc["text"] = {{"field", "label"}};
  json layer = json::array({{{"mark", "rect"}, {"encoding", rect_enc}},
                            {{"mark", {{"type", "text"}, {"fontSize", 10}}}, {"encoding", text_enc}}});
  Panel p;
  p.id = "interactions";
  p.title = "interactions: how much A's effect changes when B moves off its origin value";
  p.caption = "Each cell is a ratio of ratios: one value's effect with the other value over its "
              "effect without it (symmetric; 1 = independent); * marks an interval that excludes 1.";
  // Fixed sizes from the category counts: a layered heatmap sized by "step" fails to compile in
  // Vega (an unknown child_height signal), as the browser test found.
  std::set<std::string> columns, lines;
  for (const auto& r : rows) {
    columns.insert(r.at("a").get<std::string>());
    lines.insert(r.at("b").get<std::string>());
  }
  p.spec = finish(sized({{"layer", layer}}, std::max<std::size_t>(1, columns.size()) * 44,
                        std::max<std::size_t>(1, lines.size()) * 24),
                  rows, runs.size(), p.title);
  p.expected_marks["rect"] = static_cast<int>(rows.size());
  return p;
}

Panel pareto_panel(const std::string& id, const std::string& x_field, const std::string& x_title,
                   const std::string& front_field, const json& x_scale, const json& rows,
                   std::size_t runs, const std::string& title) {
  json kept = json::array();
  for (const auto& r : rows)
    if (r.at(x_field).is_number() && r.at("throughput").is_number()) kept.push_back(r);
  // The accuracy error spans decades near 0: few ticks, two digits, so that no two labels read
  // the same ("3e-14 3e-14").
  const json axis = x_field == "error"
                        ? json{{"format", ".1~e"}, {"tickCount", 4}, {"labelOverlap", "greedy"}}
                        : json{{"format", "~r"}, {"labelOverlap", "greedy"}};
  const json x = {{"field", x_field}, {"type", "quantitative"}, {"title", x_title}, {"scale", x_scale},
                  {"axis", axis}};
  // Log throughput: a sweep spans orders of magnitude (bf16 without a fast kernel, 20x slower).
  const json y = {{"field", "throughput"}, {"type", "quantitative"},
                  {"title", "throughput (samples/s, log)"},
                  {"scale", {{"type", "log"}, {"nice", false}, {"padding", 8}}}};
  json layer = json::array();
  layer.push_back({{"mark", {{"type", "line"}, {"color", "#c62828"}, {"interpolate", "step-after"}}},
                   {"transform", json::array({{{"filter", "datum." + front_field}}})},
                   {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", x_field}}}}}});
  layer.push_back({{"mark", {{"type", "point"}, {"filled", true}}},
                   {"encoding",
                    {{"x", x},
                     {"y", y},
                     {"color", {{"field", front_field}, {"type", "nominal"}, {"title", "on the front"},
                                {"scale", {{"domain", {true, false}}, {"range", {"#c62828", "#90a4ae"}}}}}},
                     {"shape", {{"field", "status"}, {"type", "nominal"},
                                {"scale", {{"domain", {"ok", "guarded"}}, {"range", {"circle", "cross"}}}}}},
                     {"size", {{"condition", {{"test", "datum." + front_field}, {"value", 110}}}, {"value", 40}}},
                     {"tooltip", tooltip()}}}});
  Panel p;
  p.id = id;
  p.title = title;
  p.caption = "Red: the Pareto front, configurations no other beats on both axes at once.";
  p.spec = finish(sized({{"layer", layer}}, 300, 200), kept, runs, title);
  p.expected_marks["symbol"] = static_cast<int>(kept.size());
  return p;
}

}  // namespace

std::vector<Panel> report_panels(const std::vector<RunAnalysis>& runs) {
  std::vector<std::string> knobs;
  for (const auto& a : runs)
    for (const auto& [knob, values] : a.run.axes)
      if (values.size() > 1 && std::find(knobs.begin(), knobs.end(), knob) == knobs.end())
        knobs.push_back(knob);
  const json rows = point_rows(runs, knobs);
  std::vector<Panel> panels;
  // A plot needs something to show: a knob whose measured points hold one value colours every dot
  // alike, and a panel without rows is an empty frame (the details say why in a sentence).
  for (const auto& k : knobs) {
    std::set<std::string> seen;
    for (const auto& r : rows) seen.insert(r.at(k).dump());
    if (seen.size() > 1) panels.push_back(scatter_panel(k, rows, runs.size()));
  }
  if (rows.empty()) return panels;
  Panel effects = effects_panel(runs);
  if (effects.expected_marks.at("rect") > 0) panels.push_back(std::move(effects));
  Panel interactions = interactions_panel(runs);
  if (interactions.expected_marks.at("rect") > 0) panels.push_back(std::move(interactions));
  panels.push_back(pareto_panel("pareto-p99", "p99_ms", "p99 latency per call (ms, log)",
                                "front_p99", {{"type", "log"}, {"nice", false}, {"padding", 8}},
                                rows, runs.size(), "throughput vs p99 latency"));
  panels.push_back(pareto_panel("pareto-memory", "memory_mib", "peak memory (MiB)", "front_memory",
                                {{"zero", false}}, rows, runs.size(), "throughput vs peak memory"));
  panels.push_back(pareto_panel("pareto-accuracy", "error", "1 - cosine against fp32 (symlog)",
                                "front_accuracy", {{"type", "symlog"}, {"constant", 1e-6}}, rows,
                                runs.size(), "throughput vs accuracy error"));
  // A torch.export program's points pay a compile (an AOTInductor package, torch.compile).
  const bool compiled = std::any_of(runs.begin(), runs.end(), [](const RunAnalysis& a) {
    return std::any_of(a.fronts.begin(), a.fronts.end(),
                       [](const ParetoFront& f) { return f.name == "throughput-compile"; });
  });
  if (compiled)
    panels.push_back(pareto_panel("pareto-compile", "compile_s",
                                  "compile time (s; 0: eager, nothing compiled)", "front_compile",
                                  {{"zero", true}}, rows, runs.size(),
                                  "throughput vs compile time"));
  return panels;
}

}  // namespace torchperf
