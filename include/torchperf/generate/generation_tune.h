// The tune of text generation: the fp32 eager reference once, then each configuration at each
// batch in its own process, cheapest and most promising first, each point's price (its compile
// included, as the points before it measured) weighed against the budget left before it is paid;
// every point journaled as it ends, so an interrupted tune resumes with what it measured. The
// winner is the best valid point under the objective: decode tokens/s, or the best that holds a
// latency objective (time to first token and per output token, p99).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/generate/generation_point.h"

namespace torchperf {

// --slo ttft=500ms,tpot=30ms (p99s), or an MLPerf preset: mlperf-llama3.1-8b (2 s, 100 ms),
// mlperf-interactive (500 ms, 30 ms). UsageError naming --slo otherwise.
struct GenerationSlo {
  std::optional<double> ttft_p99_s, tpot_p99_s;
  static GenerationSlo parse(const std::string& text);
  bool any() const { return ttft_p99_s || tpot_p99_s; }
  std::optional<std::string> missed_by(const GenerationFigures& f) const;  // nothing: held
  std::string to_string() const;
};

struct GenerationTuneOptions {
  GenerationWorkload workload;
  std::vector<std::int64_t> batches = {1};
  std::map<std::string, std::vector<std::string>> space;  // asked values per knob
  GenerationSlo slo;
  AccuracyGuard guard = AccuracyGuard::default_guard();
  double budget_s = 300;  // 0: none
  PointLimits limits;
  std::string out_dir;
};

struct GenerationTuneResult {
  std::string model;  // what the reference said of it
  std::vector<GenerationPoint> points;  // in the order measured
  std::optional<std::size_t> winner;
  std::optional<std::size_t> baseline;  // HF generate, eager fp32, at the first batch
  std::vector<std::string> notes;  // values left out and why, points the budget did not reach
  double wall_s = 0;
};

using GenerationProgress = std::function<void(std::size_t done, std::size_t planned,
                                              const std::string& doing)>;

// Runs the tune into options.out_dir (generation.jsonl, reference.pt, logs/); points already in
// its journal are kept, not measured again.
GenerationTuneResult run_generation_tune(const GenerationTuneOptions& options,
                                         const GenerationProgress& progress);

// A point's expected price in seconds, from what the points before it paid (priors before any).
double expected_price_s(const GenerationSettings& settings, const std::vector<GenerationPoint>& done);

// What a combination promises over the baseline at batch: the most that any of the nearest
// measured valid points predicts (its rate times the measured effect of each knob still apart,
// from that point where measured, else from the baseline; the weights' only within the
// baseline's engine; quantised weights with no evidence: the ratio of the bytes a decode step
// reads), over the baseline's rate; 0 for a change that failed or was refused, or for quantised
// weights the guard refused in this engine; 1 with no evidence at all.
double predicted_gain(const GenerationSettings& settings, std::int64_t batch,
                      const std::vector<GenerationPoint>& done, const GenerationSettings& base);

// The best valid point (holding the objective's limits), or nothing.
std::optional<std::size_t> pick_winner(const std::vector<GenerationPoint>& points,
                                       const GenerationSlo& slo);

}  // namespace torchperf
