// One text-generation point: a configuration at a batch, run by python/torchperf/generation.py in
// a process of its own (fresh threads and compile caches), under a time limit and a memory cap;
// its calls' timestamps read back into the figures the peers report, with their spread: decode
// tokens/s, time to first token, time per output token, inter-token latency, end-to-end tokens/s,
// memory, the bytes a decode step reads and the bandwidth that makes, and the guard's figures.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/generate/generation_knobs.h"
#include "torchperf/generate/generation_workload.h"
#include "torchperf/measure/statistics.h"
#include "torchperf/process/command_run.h"
#include "torchperf/sweep/objective.h"

namespace torchperf {

// The logits of one step against the reference's (models/accuracy.h's figures).
struct LogitErrors {
  double max_abs_error = 0, max_rel_error = 0, cosine = 1, top1 = 1;
  std::int64_t nonfinite_values = 0;
};

struct GenerationGuard {
  double token_agreement = 1;   // of the greedy tokens over the guard's steps
  std::int64_t agreed_steps = 0;  // steps before the first that differs in any row
  std::int64_t steps_compared = 0;
  LogitErrors prefill;
  std::optional<LogitErrors> decode_step;  // teacher-forced: where the first token agreed
};

struct GenerationFigures {
  Summary decode_tokens_per_s;  // per call: rows x (new tokens - 1) / decode time
  Summary ttft_s;               // per call: the prefill and its token
  Summary tpot_s;               // per call: decode time / (new tokens - 1)
  Summary itl_s;                // every step of every call
  Summary end_to_end_tokens_per_s;  // per call: rows x new tokens / the call's time
  std::vector<double> warmup_s;  // the warm-up calls' times: the first pays the compiles
  double load_s = 0;             // loading and configuring (quantisation; not the compile)
  std::int64_t weights_bytes = 0, kv_cache_bytes = 0, peak_bytes = 0;
  std::string peak_counts;
  double step_weight_bytes = 0, step_kv_bytes = 0;  // what a decode step reads
  double achieved_gb_per_s = 0;  // the step's bytes / the median time per output token
  std::optional<GenerationGuard> guard;
  // The transformers lines that run this point in a user's program, written by the Python side
  // that configured it (generation_model.snippet): the report prints the winner's.
  std::string code;
  // What the point paid before its steady state: loading and configuring (an export, a
  // quantisation) and its first call beyond its last warm-up call (the compiles).
  double setup_s() const;
};

// The answer's JSON (generation.py's one line) as figures; RuntimeFailure when it lacks a field.
GenerationFigures read_generation_answer(const nlohmann::json& answer);

struct GenerationPoint {
  GenerationSettings settings;
  std::int64_t batch = 1;
  bool measured = false;
  std::string error;       // why not, in one line
  std::string error_kind;  // the error kind's name (error.h), "" when measured
  std::string log_path;
  double wall_s = 0;
  GenerationFigures figures;
  std::optional<std::string> guard_failure;  // the guard's rule said no, and why
  bool valid() const { return measured && !guard_failure; }
  std::string label() const;  // "batch=8;engine=pytorch;..."
};

struct PointLimits {
  double timeout_s = 600;
  std::int64_t memory_cap_bytes = 0;  // 0: none
  std::function<bool()> stop_requested;  // Ctrl-C: the running point is stopped (Interrupted)
};

// The request generation.py reads (its job "point", or "reference" with out).
nlohmann::json point_request(const GenerationWorkload& workload, const GenerationSettings& settings,
                             std::int64_t batch, const std::string& reference);
nlohmann::json reference_request(const GenerationWorkload& workload, const std::string& out);

// Runs the fp32 eager reference once (the guard's tokens and logits) into out; what it says of
// the model. Throws the child's error (ModelError for a model without generate, WorkloadError
// for prompts past the model's positions, ...).
nlohmann::json run_generation_reference(const GenerationWorkload& workload, const std::string& out,
                                        const std::string& log_dir, const PointLimits& limits);
// Runs one point; a point that fails says why in the result (the tune goes on).
GenerationPoint run_generation_point(const GenerationWorkload& workload,
                                     const GenerationSettings& settings, std::int64_t batch,
                                     const std::string& reference, const std::string& log_path,
                                     const PointLimits& limits, const AccuracyGuard& guard);

// The guard's rule on the prefill's and the decode step's logits; nothing when it passes.
std::optional<std::string> judge(const GenerationGuard& figures, const AccuracyGuard& guard);

nlohmann::json to_json(const GenerationPoint& point);
GenerationPoint generation_point_from_json(const nlohmann::json& j);

}  // namespace torchperf
