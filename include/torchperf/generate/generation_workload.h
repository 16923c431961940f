// What a text-generation point is fed: the causal LM as the user has it (a save_pretrained folder
// or a Python factory), prompts of token ids whose lengths come from the feed part (a fixed length
// or a distribution, drawn seeded so every point sees the same calls), new tokens, and the calls
// a point times. No tokenizer: token ids are drawn from the model's vocabulary by the worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/feed/length_distribution.h"

namespace torchperf {

struct LanguageModelSource {
  enum class Kind { kHfFolder, kPython };
  Kind kind = Kind::kHfFolder;
  std::string location;  // the folder, or MODULE:CALLABLE
  std::string text() const;  // "hf:PATH" or the MODULE:CALLABLE
  nlohmann::json to_json() const;
};

// "hf:PATH" (a folder with config.json, as save_pretrained writes it), or --from-python's
// MODULE:CALLABLE when model is empty; UsageError naming the input otherwise.
LanguageModelSource parse_model_source(const std::string& model, const std::string& from_python);
// Whether a tune's model argument names a generation workload.
bool names_generation_model(const std::string& model);

// "128" (every prompt that long) or a distribution as --dim takes it ("32..512",
// "lognormal:100:0.8:8..1024", "file:LENGTHS"); UsageError naming --prompt otherwise.
LengthDistribution parse_prompt_lengths(const std::string& text);

// One generate() call: each row's prompt length, the new tokens every row makes, the seed its
// token ids are drawn from.
struct GenerationCall {
  std::vector<std::int64_t> prompt_lengths;
  std::int64_t new_tokens = 1;
  std::uint64_t seed = 0;
  nlohmann::json to_json() const;
};

struct GenerationWorkload {
  LanguageModelSource source;
  LengthDistribution prompt;  // a fixed length is min == max
  std::int64_t new_tokens = 64;
  std::string device = "cpu";
  std::uint64_t seed = 0;
  std::size_t timed_calls = 6;
  std::size_t warmup_calls = 2;
  // The guard's call: a few rows, the tokens whose agreement with the reference is printed.
  std::size_t guard_rows = 4;
  std::int64_t guard_tokens = 16;
  // Where an engine's export is kept for the points after the first ("" : each exports its own).
  std::string cache_dir;
};

// UsageError for 0 new tokens or a prompt length below 1, naming the flag.
void check_workload(const GenerationWorkload& workload);

// count calls of batch rows; the same workload, batch and purpose give the same calls, so every
// configuration is timed on the same prompts. purpose tells warm-up, timed and guard calls apart.
std::vector<GenerationCall> draw_calls(const GenerationWorkload& workload, std::int64_t batch,
                                       std::size_t count, const std::string& purpose);
// The guard's call (the same for every batch and configuration).
GenerationCall guard_call(const GenerationWorkload& workload);

}  // namespace torchperf
