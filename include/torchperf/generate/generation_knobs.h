// The knobs of text generation, each with its values, its baseline and when it applies (and why
// not), in one registry: KV cache, compile of the decode step or the forward, torch.compile's mode,
// precision, torchao weights, attention, threads and the engine. A point is one value per knob;
// the space is every applicable combination of the values asked for.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "torchperf/models/workload_traits.h"

namespace torchperf {

// The facts about the machine and the installed engines that decide which values apply.
struct GenerationTraits {
  bool cuda = false;
  bool bf16_native = false;  // the CPU has bf16 instructions (avx512_bf16, amx_bf16), or a GPU
  int usable_cores = 1;
  std::vector<std::string> engines;  // installed beside torch: openvino (optimum-intel)
};
// This machine's traits for device ("cpu", "cuda", "cuda:N").
GenerationTraits generation_traits(const std::string& device);

// One value per knob name: {"engine": "pytorch", "cache": "static", ...}.
using GenerationSettings = std::map<std::string, std::string>;

struct GenerationKnob {
  std::string name;
  std::string description;  // what it does and why it can pay
  std::function<std::vector<std::string>(const GenerationTraits&)> values;  // a default sweep's
  std::vector<std::string> all_values;  // any the knob accepts (threads: any positive integer)
  std::function<std::string(const GenerationTraits&)> baseline;
  // Whether value applies on this machine beside the point's other settings, and why not.
  std::function<Applicability(const GenerationTraits&, const GenerationSettings&,
                              const std::string& value)>
      applies;
};

// In the order a point is described and applied.
const std::vector<GenerationKnob>& generation_knobs();
const GenerationKnob& find_generation_knob(const std::string& name);  // ConfigError otherwise

// "engine=pytorch;cache=static;..." in registry order; and back (ConfigError for an unknown knob
// or value); knobs left out take their baselines.
std::string settings_text(const GenerationSettings& settings);
GenerationSettings parse_settings(const std::string& text, const GenerationTraits& traits);
GenerationSettings baseline_settings(const GenerationTraits& traits);

// "cache=dynamic,static;compile=off,decode" (as tune's --space); ConfigError naming the knob or
// value. Knobs not named sweep their default values.
std::map<std::string, std::vector<std::string>> parse_generation_space(const std::string& text);

struct GenerationSpace {
  std::vector<GenerationSettings> points;  // the baseline first
  std::vector<std::string> left_out;       // "compile=decode: needs cache=static", once each
};
GenerationSpace generation_space(const GenerationTraits& traits,
                                 const std::map<std::string, std::vector<std::string>>& asked);

}  // namespace torchperf
