#include "torchperf/generate/generation_knobs.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "torchperf/error.h"
#include "torchperf/measure/environment.h"
#include "torchperf/models/python_side.h"
#include "torchperf/text.h"

namespace torchperf {

GenerationTraits generation_traits(const std::string& device) {
  GenerationTraits t;
  t.cuda = device.rfind("cuda", 0) == 0;
  const auto isa = cpu_isa_flags();
  const auto has = [&](const std::string& flag) {
    return std::find(isa.begin(), isa.end(), flag) != isa.end();
  };
  t.bf16_native = t.cuda || has("avx512_bf16") || has("amx_bf16");
  t.usable_cores = std::max(1, usable_cores());
  for (const auto& engine : installed_engines())
    if (engine.name == "optimum-intel") t.engines.push_back("openvino");
  return t;
}

namespace {

using Values = std::vector<std::string>;
std::string join(const Values& values, const char* separator) {
  return fmt::format("{}", fmt::join(values, separator));
}
Applicability yes() { return Applicability::yes(); }
Applicability no(std::string why) { return Applicability::no(std::move(why)); }
std::string get(const GenerationSettings& s, const std::string& knob) {
  const auto it = s.find(knob);
  return it == s.end() ? std::string() : it->second;
}
bool pytorch(const GenerationSettings& s) { return get(s, "engine") != "openvino"; }
std::function<std::string(const GenerationTraits&)> fixed(std::string value) {
  return [value](const GenerationTraits&) { return value; };
}
Applicability pytorch_only(const GenerationSettings& s, const std::string& what) {
  return pytorch(s) ? yes() : no(what + " is PyTorch's; OpenVINO keeps its own");
}

GenerationKnob engine_knob() {
  return {"engine",
          "who runs generate: PyTorch (transformers' own loop) or OpenVINO through optimum-intel "
          "(an exported graph with a stateful KV cache); CPU users' next step after PyTorch",
          [](const GenerationTraits& t) {
            Values v{"pytorch"};
            if (!t.cuda) v.insert(v.end(), t.engines.begin(), t.engines.end());
            return v;
          },
          {"pytorch", "openvino"}, fixed("pytorch"),
          [](const GenerationTraits& t, const GenerationSettings&, const std::string& v) {
            if (v != "openvino") return yes();
            if (t.cuda) return no("OpenVINO runs on the CPU here");
            if (std::find(t.engines.begin(), t.engines.end(), v) == t.engines.end())
              return no("optimum-intel is not installed (pip install 'optimum-intel[openvino]')");
            return yes();
          }};
}

GenerationKnob precision_knob() {
  return {"precision",
          "the weights' and activations' type: bf16 halves the bytes every decode step reads, where "
          "the hardware computes in it",
          [](const GenerationTraits& t) {
            Values v{"fp32"};
            if (t.bf16_native) v.push_back("bf16");
            if (t.cuda) v.push_back("fp16");
            return v;
          },
          {"fp32", "bf16", "fp16"}, fixed("fp32"),
          [](const GenerationTraits& t, const GenerationSettings&, const std::string& v) {
            if (v == "bf16" && !t.bf16_native)
              return no("this CPU has no bf16 instructions (avx512_bf16, amx_bf16): bf16 would be "
                        "emulated");
            if (v == "fp16" && !t.cuda) return no("fp16 has fast kernels on CUDA only");
            return yes();
          }};
}

GenerationKnob weights_knob() {
  return {"weights",
          "weight-only or dynamic-activation int8, or int4, through torchao's quantize_ (OpenVINO: "
          "NNCF's weight compression): decode is memory-bound, and its tokens/s follow the bytes "
          "read",
          [](const GenerationTraits& t) {
            Values v{"none", "int8-weight-only", "int8-dynamic-activation"};
            // int4 has a kernel in torchao on CUDA, and in OpenVINO on the CPU.
            if (t.cuda || std::find(t.engines.begin(), t.engines.end(), "openvino") != t.engines.end())
              v.push_back("int4-weight-only");
            return v;
          },
          {"none", "int8-weight-only", "int8-dynamic-activation", "int4-weight-only"},
          fixed("none"),
          [](const GenerationTraits& t, const GenerationSettings& s, const std::string& v) {
            if (v == "none") return yes();
            if (!pytorch(s))
              return v == "int8-dynamic-activation"
                         ? no("OpenVINO compresses weights only (NNCF)")
                         : yes();
            if (v == "int4-weight-only" && !t.cuda)
              return no("torchao 0.18's int4 kernel (tinygemm) is CUDA's (OpenVINO's runs here)");
            return yes();
          }};
}

GenerationKnob cache_knob() {
  return {"cache",
          "the KV cache: dynamic grows with the text; static is allocated once at prompt + new "
          "tokens, so that a compiled decode step sees one shape",
          [](const GenerationTraits&) { return Values{"dynamic", "static"}; },
          {"dynamic", "static"}, fixed("dynamic"),
          [](const GenerationTraits&, const GenerationSettings& s, const std::string& v) {
            return v == "dynamic" ? yes() : pytorch_only(s, "cache=static");
          }};
}

GenerationKnob compile_knob() {
  return {"compile",
          "torch.compile: of the decode step alone (transformers' compile_config; the prefill runs "
          "eager) or of the whole forward (transformers' documented recipe)",
          [](const GenerationTraits&) { return Values{"off", "decode", "forward"}; },
          {"off", "decode", "forward"}, fixed("off"),
          [](const GenerationTraits&, const GenerationSettings& s, const std::string& v) {
            if (v == "off") return yes();
            if (!pytorch(s)) return no("OpenVINO compiles its own graph");
            if (v == "decode" && get(s, "cache") != "static")
              return no("transformers compiles the decode step only with cache=static");
            return yes();
          }};
}

GenerationKnob compile_mode_knob() {
  return {"compile_mode",
          "torch.compile's mode: reduce-overhead replays CUDA graphs, max-autotune searches "
          "kernels (long compiles)",
          [](const GenerationTraits& t) {
            return t.cuda ? Values{"default", "reduce-overhead"} : Values{"default"};
          },
          {"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"},
          fixed("default"),
          [](const GenerationTraits& t, const GenerationSettings& s, const std::string& v) {
            if (v == "default") return yes();
            if (get(s, "compile") == "off" || get(s, "compile").empty())
              return no("a mode of torch.compile needs compile=decode or forward");
            if (v == "reduce-overhead" && !t.cuda) return no("CUDA graphs need a CUDA device");
            return yes();
          }};
}

GenerationKnob fullgraph_knob() {
  return {"fullgraph",
          "torch.compile's fullgraph=True: one graph or an error, no silent graph breaks",
          [](const GenerationTraits&) { return Values{"off"}; }, {"off", "on"}, fixed("off"),
          [](const GenerationTraits&, const GenerationSettings& s, const std::string& v) {
            if (v == "off") return yes();
            if (get(s, "compile") == "off" || get(s, "compile").empty())
              return no("fullgraph is torch.compile's: it needs compile=decode or forward");
            return yes();
          }};
}

GenerationKnob attention_knob() {
  return {"attention",
          "the attention implementation transformers runs: PyTorch's scaled_dot_product_attention "
          "or the model's eager matmuls",
          [](const GenerationTraits&) { return Values{"sdpa"}; }, {"sdpa", "eager"},
          fixed("sdpa"),
          [](const GenerationTraits&, const GenerationSettings& s, const std::string& v) {
            return v == "sdpa" ? yes() : pytorch_only(s, "attention=" + v);
          }};
}

GenerationKnob threads_knob() {
  return {"threads",
          "intra-op threads (torch.set_num_threads; OpenVINO's INFERENCE_NUM_THREADS)",
          [](const GenerationTraits& t) { return Values{std::to_string(t.usable_cores)}; },
          {"1", "2", "4", "..."},
          [](const GenerationTraits& t) { return std::to_string(t.usable_cores); },
          [](const GenerationTraits& t, const GenerationSettings&, const std::string& v) {
            if (std::stoll(v) > 4LL * t.usable_cores)
              return no("more than 4 threads a usable core only oversubscribes");
            return yes();
          }};
}

void check_value(const GenerationKnob& knob, const std::string& value) {
  if (knob.name == "threads") {
    if (!positive_whole_number(value) || value.size() > 6)
      throw ConfigError("threads='" + value + "': expected a positive integer");
    return;
  }
  if (std::find(knob.all_values.begin(), knob.all_values.end(), value) == knob.all_values.end())
    throw ConfigError(knob.name + "='" + value + "': expected one of " +
                      join(knob.all_values, ", "));
}

}  // namespace

const std::vector<GenerationKnob>& generation_knobs() {
  static const std::vector<GenerationKnob> knobs = {
      engine_knob(),       precision_knob(), weights_knob(),   cache_knob(),   compile_knob(),
      compile_mode_knob(), fullgraph_knob(), attention_knob(), threads_knob()};
  return knobs;
}

const GenerationKnob& find_generation_knob(const std::string& name) {
  for (const auto& knob : generation_knobs())
    if (knob.name == name) return knob;
  std::vector<std::string> names;
  for (const auto& knob : generation_knobs()) names.push_back(knob.name);
  throw ConfigError("'" + name + "' is not a generation knob; they are " + join(names, ", "));
}

GenerationSettings baseline_settings(const GenerationTraits& traits) {
  GenerationSettings s;
  for (const auto& knob : generation_knobs()) s[knob.name] = knob.baseline(traits);
  return s;
}

std::string settings_text(const GenerationSettings& settings) {
  std::vector<std::string> parts;
  for (const auto& knob : generation_knobs()) {
    const auto it = settings.find(knob.name);
    if (it != settings.end()) parts.push_back(knob.name + "=" + it->second);
  }
  return join(parts, ";");
}

GenerationSettings parse_settings(const std::string& text, const GenerationTraits& traits) {
  GenerationSettings s = baseline_settings(traits);
  for (const auto& part : split(text, ';')) {
    if (part.empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string::npos)
      throw ConfigError("'" + part + "': expected KNOB=VALUE (e.g. cache=static)");
    const auto& knob = find_generation_knob(trim(part.substr(0, eq)));
    const std::string value = trim(part.substr(eq + 1));
    check_value(knob, value);
    s[knob.name] = value;
  }
  return s;
}

std::map<std::string, std::vector<std::string>> parse_generation_space(const std::string& text) {
  std::map<std::string, std::vector<std::string>> asked;
  for (const auto& part : split(text, ';')) {
    if (part.empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string::npos)
      throw ConfigError("--space '" + part + "': expected KNOB=V1,V2 (e.g. cache=dynamic,static)");
    const auto& knob = find_generation_knob(trim(part.substr(0, eq)));
    if (asked.count(knob.name)) throw ConfigError("--space names " + knob.name + " twice");
    for (const auto& value : split(part.substr(eq + 1), ',')) {
      check_value(knob, value);
      asked[knob.name].push_back(value);
    }
  }
  return asked;
}

namespace {

// Every combination of the values, the knobs in registry order.
void combine(const std::vector<std::vector<std::string>>& values, std::size_t at,
             std::vector<std::string>& chosen, std::vector<std::vector<std::string>>& out) {
  if (at == values.size()) {
    out.push_back(chosen);
    return;
  }
  for (const auto& v : values[at]) {
    chosen.push_back(v);
    combine(values, at + 1, chosen, out);
    chosen.pop_back();
  }
}

}  // namespace

GenerationSpace generation_space(const GenerationTraits& traits,
                                 const std::map<std::string, std::vector<std::string>>& asked) {
  const auto& knobs = generation_knobs();
  std::vector<std::vector<std::string>> values;
  for (const auto& knob : knobs) {
    const auto it = asked.find(knob.name);
    values.push_back(it != asked.end() ? it->second : knob.values(traits));
  }
  std::vector<std::vector<std::string>> combos;
  std::vector<std::string> chosen;
  combine(values, 0, chosen, combos);

  GenerationSpace space;
  std::map<std::string, std::string> why_not;  // knob=value -> a reason it was dropped
  std::set<std::string> used;
  const GenerationSettings base = baseline_settings(traits);
  for (const auto& combo : combos) {
    GenerationSettings s;
    for (std::size_t i = 0; i < knobs.size(); ++i) s[knobs[i].name] = combo[i];
    bool keep = true;
    for (const auto& knob : knobs) {
      const auto verdict = knob.applies(traits, s, s[knob.name]);
      if (verdict.applies) continue;
      // A value left at its baseline where it does not apply says nothing (the cache of an
      // engine that keeps its own): the point stands; any other is dropped.
      if (s[knob.name] == base.at(knob.name)) continue;
      why_not.emplace(knob.name + "=" + s[knob.name], verdict.reason);
      keep = false;
    }
    if (!keep) continue;
    for (const auto& [k, v] : s) used.insert(k + "=" + v);
    if (s == base)
      space.points.insert(space.points.begin(), s);
    else
      space.points.push_back(s);
  }
  for (const auto& [value, reason] : why_not)
    if (!used.count(value)) space.left_out.push_back(value + ": " + reason);
  return space;
}

}  // namespace torchperf
