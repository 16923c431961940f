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

}  // namespace

std::string generation_snippet(const GenerationSettings& s) {
  const auto at = [&](const char* k, const char* d) {
    const auto it = s.find(k);
    return it == s.end() ? std::string(d) : it->second;
  };
  std::vector<std::string> lines;
  if (at("engine", "pytorch") == "openvino") {
    lines.push_back("from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig");
    std::string args = "export=True";
    const auto weights = at("weights", "none");
    if (weights != "none")
      args += fmt::format(", quantization_config=OVWeightQuantizationConfig(bits={})",
                          weights == "int4-weight-only" ? 4 : 8);
    const std::string hint = at("precision", "fp32") == "bf16" ? "bf16" : "f32";
    args += fmt::format(", ov_config={{\"INFERENCE_PRECISION_HINT\": \"{}\", "
                        "\"INFERENCE_NUM_THREADS\": \"{}\"}}",
                        hint, at("threads", "0"));
    lines.push_back("model = OVModelForCausalLM.from_pretrained(path, " + args + ")");
    lines.push_back("out = model.generate(input_ids, attention_mask=mask, max_new_tokens=N, do_sample=False)");
    return fmt::format("{}\n", fmt::join(lines, "\n"));
  }
  lines.push_back("import torch");
  if (s.count("threads")) lines.push_back("torch.set_num_threads(" + at("threads", "1") + ")");
  const auto precision = at("precision", "fp32");
  if (precision != "fp32")
    lines.push_back(std::string("model = model.to(torch.") +
                    (precision == "bf16" ? "bfloat16" : "float16") + ")");
  if (at("attention", "sdpa") != "sdpa")
    lines.push_back("model.set_attn_implementation(\"" + at("attention", "sdpa") + "\")");
  const auto weights = at("weights", "none");
  if (weights != "none") {
    const std::string config = weights == "int8-weight-only" ? "Int8WeightOnlyConfig()"
                               : weights == "int8-dynamic-activation"
                                   ? "Int8DynamicActivationInt8WeightConfig()"
                                   : "Int4WeightOnlyConfig(group_size=128, "
                                     "int4_packing_format=\"tile_packed_to_4d\")";
    lines.push_back("from torchao.quantization import quantize_, " +
                    config.substr(0, config.find('(')));
    lines.push_back("quantize_(model, " + config + ")");
  }
  if (at("cache", "dynamic") == "static")
    lines.push_back("model.generation_config.cache_implementation = \"static\"");
  const auto mode = at("compile_mode", "default");
  const std::string mode_arg = mode == "default" ? "" : "mode=\"" + mode + "\"";
  const std::string full_arg = at("fullgraph", "off") == "on" ? "fullgraph=True" : "";
  std::vector<std::string> args;
  for (const auto& a : {mode_arg, full_arg})
    if (!a.empty()) args.push_back(a);
  if (at("compile", "off") == "decode") {
    lines.push_back("from transformers import CompileConfig");
    lines.push_back(fmt::format("model.generation_config.compile_config = CompileConfig({})",
                                fmt::join(args, ", ")));
    lines.push_back("# transformers compiles the decode step by itself on CUDA; elsewhere:");
    lines.push_back("model.generation_config.compile_config._compile_all_devices = True");
  } else if (at("compile", "off") == "forward") {
    args.insert(args.begin(), "model.forward");
    lines.push_back(fmt::format("model.forward = torch.compile({})", fmt::join(args, ", ")));
  }
  lines.push_back("out = model.generate(input_ids, attention_mask=mask, max_new_tokens=N, do_sample=False)");
  return fmt::format("{}\n", fmt::join(lines, "\n"));
}

namespace {

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
    out += "\n\nIn your program (transformers):\n" + generation_snippet(w.settings);
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
    j["snippet"] = generation_snippet(r.points[*r.winner].settings);
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
  if (r.winner)
    before += "<h2>The winner in your program</h2><pre>" +
              html_escape(generation_snippet(r.points[*r.winner].settings)) + "</pre>";
  for (const auto& note : r.notes) before += "<p>note: " + html_escape(note) + "</p>";
  page.body_before_plots = before;
  page.panels.push_back(std::move(panel));
  return render_page(page);
}

}  // namespace torchperf
