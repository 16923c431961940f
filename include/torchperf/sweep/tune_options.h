// What a user asks tune for: the workload (as for bench), the space to sweep, the objective and
// guard, and the limits of the experiment. The space-defining part is fingerprinted so that a
// journal can only be resumed by the same experiment.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/bench/bench_options.h"
#include "torchperf/sweep/objective.h"
#include "torchperf/sweep/search.h"

namespace torchperf {

struct TuneOptions {
  BenchOptions workload;  // model, inputs, device, seed; time_s is the budget of each point
  // Knob -> the values to sweep; knobs not named sweep every applicable value.
  std::map<std::string, std::vector<std::string>> space;
  Objective objective;
  AccuracyGuard guard = AccuracyGuard::default_guard();
  std::uint64_t order_seed = 0;  // the random order of points
  SearchKind search = SearchKind::kSmart;
  std::size_t leaders = 3;       // re-measured head to head at the end
  // The configuration the user's code runs today (e.g. "runtime=python,graph=eager"): the winner
  // is also measured head to head against it, at the winner's batch. Empty: not compared.
  std::string as_given;

  // Limits: not part of the fingerprint, a resumed sweep may change them.
  double budget_s = 30 * 60;  // wall time for the sweep and confirmation; 0: none (the default)
  double point_timeout_s = 0;         // 0: derived from time_s
  std::int64_t memory_cap_bytes = 0;  // per worker RSS; 0: 90% of the memory available
  std::string out_dir;
  bool resume = false;
  std::string worker_executable;  // the torchperf binary that serves `__worker`
  // Where the points are measured: "" here, else the address of a Ray cluster whose nodes measure
  // them (the CLI resolves --cluster and $RAY_ADDRESS: ray_address_of). Not part of the
  // experiment: --resume may continue on another cluster, or here.
  std::string cluster;
};

// Throws UsageError for out-of-range values; knob names and values are checked by the space.
void validate(const TuneOptions& options);

// Parses "precision=fp32,bf16-autocast;graph=eager,frozen-opt" into knob -> values (UsageError).
std::map<std::string, std::vector<std::string>> parse_space(const std::string& text);
std::string space_to_string(const std::map<std::string, std::vector<std::string>>& space);

// Durations "90", "90s", "20m", "1h", "1h30m" in seconds; sizes "4G", "512M", "1073741824" in
// bytes.
double parse_duration(const std::string& text, const std::string& what);
std::int64_t parse_size(const std::string& text, const std::string& what);

// The options that define the experiment (workload, space, objective, guard, point time, seed),
// as canonical JSON: equal for two runs exactly when their results may share a journal.
nlohmann::json experiment_json(const TuneOptions& options);
// Restores those options from experiment_json's output (resume); limits are left as they are.
void apply_experiment_json(const nlohmann::json& experiment, TuneOptions& options);

double effective_point_timeout_s(const TuneOptions& options);
std::int64_t effective_memory_cap_bytes(const TuneOptions& options);

}  // namespace torchperf
