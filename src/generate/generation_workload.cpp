#include "torchperf/generate/generation_workload.h"

#include <filesystem>
#include <functional>

#include "torchperf/error.h"

namespace torchperf {

std::string LanguageModelSource::text() const {
  return kind == Kind::kHfFolder ? "hf:" + location : location;
}

nlohmann::json LanguageModelSource::to_json() const {
  if (kind == Kind::kHfFolder) return {{"kind", "hf"}, {"path", location}};
  return {{"kind", "python"}, {"spec", location}};
}

bool names_generation_model(const std::string& model) { return model.rfind("hf:", 0) == 0; }

LanguageModelSource parse_model_source(const std::string& model, const std::string& from_python) {
  if (!model.empty() && !from_python.empty())
    throw UsageError("give the model either as hf:PATH or with --from-python, not both");
  if (!from_python.empty()) {
    if (from_python.find(':') == std::string::npos)
      throw UsageError("--from-python '" + from_python +
                       "': expected MODULE:CALLABLE returning a transformers causal LM");
    return {LanguageModelSource::Kind::kPython, from_python};
  }
  if (!names_generation_model(model) || model.size() == 3)
    throw UsageError("model '" + model +
                     "': expected hf:PATH, a folder written by save_pretrained, or --from-python "
                     "MODULE:CALLABLE");
  const std::string path = model.substr(3);
  if (!std::filesystem::is_directory(path))
    throw ModelError("model '" + model + "': no such folder");
  if (!std::filesystem::is_regular_file(std::filesystem::path(path) / "config.json"))
    throw ModelError("model '" + model +
                     "': no config.json there; expected a folder written by save_pretrained");
  return {LanguageModelSource::Kind::kHfFolder, std::filesystem::absolute(path).lexically_normal().string()};
}

LengthDistribution parse_prompt_lengths(const std::string& text) {
  bool whole = !text.empty();
  for (char c : text) whole = whole && c >= '0' && c <= '9';
  if (whole) {
    LengthDistribution fixed;
    fixed.min = fixed.max = std::stoll(text);
    fixed.text = text;
    if (fixed.min < 1) throw UsageError("--prompt '" + text + "': expected at least 1 token");
    return fixed;
  }
  try {
    return parse_dim_option("prompt=" + text).distribution;
  } catch (const UsageError& e) {
    throw UsageError("--prompt '" + text +
                     "': expected a length (128) or a distribution (32..512, "
                     "lognormal:MEDIAN:SIGMA:MIN..MAX, file:LENGTHS): " + e.what());
  }
}

nlohmann::json GenerationCall::to_json() const {
  return {{"prompt_lengths", prompt_lengths}, {"new_tokens", new_tokens}, {"seed", seed}};
}

void check_workload(const GenerationWorkload& workload) {
  if (workload.new_tokens < 1)
    throw UsageError("--new-tokens " + std::to_string(workload.new_tokens) +
                     ": expected at least 1 new token");
  if (workload.prompt.min < 1) throw UsageError("--prompt: a prompt needs at least 1 token");
  if (workload.timed_calls < 1) throw UsageError("--calls: expected at least 1 timed call");
}

namespace {

std::uint64_t seed_for(const GenerationWorkload& workload, std::int64_t batch,
                       const std::string& purpose, std::size_t index) {
  // Stable across builds (std::hash of a string is not specified): FNV-1a.
  std::uint64_t h = 1469598103934665603ull ^ workload.seed;
  const std::string key = purpose + "/" + std::to_string(batch) + "/" + std::to_string(index);
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h >> 1;  // a JSON integer Python reads as a non-negative int
}

}  // namespace

std::vector<GenerationCall> draw_calls(const GenerationWorkload& workload, std::int64_t batch,
                                       std::size_t count, const std::string& purpose) {
  std::vector<GenerationCall> calls;
  for (std::size_t i = 0; i < count; ++i) {
    GenerationCall call;
    call.seed = seed_for(workload, batch, purpose, i);
    call.prompt_lengths = workload.prompt.draw(static_cast<std::size_t>(batch), call.seed);
    call.new_tokens = workload.new_tokens;
    calls.push_back(std::move(call));
  }
  return calls;
}

GenerationCall guard_call(const GenerationWorkload& workload) {
  GenerationWorkload guard = workload;
  guard.new_tokens = std::min(workload.guard_tokens, workload.new_tokens);
  return draw_calls(guard, static_cast<std::int64_t>(workload.guard_rows), 1, "guard").front();
}

}  // namespace torchperf
