// What a generation tune tells the user: the table (decode tokens/s, time to first token, time per
// output token, inter-token p99, memory, bandwidth, compile time, the guard's figures per point),
// the winner against HF generate's eager fp32, its code in transformers' terms, and the JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "torchperf/generate/generation_tune.h"

namespace torchperf {

std::string format_generation_result(const GenerationTuneResult& result);
nlohmann::json generation_result_json(const GenerationTuneResult& result);
// The Python lines that make a user's model's own generate() run settings.
std::string generation_snippet(const GenerationSettings& settings);

}  // namespace torchperf
