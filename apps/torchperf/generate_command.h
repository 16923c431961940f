// tune's text-generation workload (`tune hf:PATH`, or `--generate --from-python MODULE:CALLABLE`):
// its own flags, and the run from tune's shared ones (batch, threads, space, accuracy, budget,
// out, json) to the generate part's tune, its table or JSON, and its exit code.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

namespace torchperf::cli {

struct GenerationFlags {
  bool generate = false;
  std::string prompt = "128";
  std::int64_t new_tokens = 64;
  std::string slo;
  std::size_t calls = 6;
};

void add_generation_flags(CLI::App& cmd, GenerationFlags& flags);

// What the generation tune takes of tune's own flags.
struct SharedTuneFlags {
  std::string model, from_python, device, space, accuracy, budget, out, point_timeout, memory_cap;
  std::uint64_t seed = 0;
  std::map<std::string, std::string> knob_values;  // batch and threads; any other is refused
  bool json = false, quiet = false;
};

// Whether tune's arguments name a generation workload.
bool wants_generation(const GenerationFlags& flags, const std::string& model);

int run_generation_tune_command(const GenerationFlags& flags, const SharedTuneFlags& shared);

}  // namespace torchperf::cli
