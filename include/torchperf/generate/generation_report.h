// What a generation tune tells the user: the table (decode tokens/s, time to first token, time per
// output token, inter-token p99, memory, bandwidth, compile time, the guard's figures per point),
// the winner against HF generate's eager fp32, its code in transformers' terms, and the JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/generate/generation_tune.h"

namespace torchperf {

std::string format_generation_result(const GenerationTuneResult& result);
nlohmann::json generation_result_json(const GenerationTuneResult& result);
// The HTML report (self-contained, as every torchperf page): the table, the notes, the winner's
// code, and the Pareto front of decode tokens/s against time to first token, the winner marked.
std::string generation_page(const GenerationTuneResult& result, const std::string& model);
// The points on that front (measured, valid), by index: no other valid point has both a shorter
// TTFT and a higher decode rate.
std::vector<std::size_t> generation_front(const GenerationTuneResult& result);

}  // namespace torchperf
