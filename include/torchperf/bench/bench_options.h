// What a user asks bench for, before anything is resolved against the model.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/config/configuration.h"
#include "torchperf/feed/shape_stream.h"

namespace torchperf {

struct BenchOptions {
  std::string model;                // "builtin:NAME" or a TorchScript file
  std::string input_spec;           // empty: the model's own default (built-ins) — files need one
  std::string inputs_file;          // tensors saved with torch.save, instead of a spec
  // int8's calibration samples (--calibration): a batch of real inputs saved with torch.save,
  // checked against what the model is fed; "": each point calibrates on its own inputs.
  std::string calibration_file;
  // One "NAME=DISTRIBUTION" per named dimension of input_spec (--dim; length_distribution.h).
  std::vector<std::string> dims;
  // The caller's own nn.Module, saved by the Python API (python/torchperf/module_file.py): the
  // python runtime times it instead of the program's module, whose input checks and pytree calls
  // cost microseconds a call that the caller's code does not pay. Empty: the program's module.
  // kProgramStandsIn: a tune from Python whose module could not travel (a class in __main__):
  // the program's module stands in, and the run is from Python all the same.
  std::string python_module;
  static constexpr const char* kProgramStandsIn = "@program";
  Configuration config;             // the knobs the user set; the rest resolve to their baselines
  std::optional<Configuration> vs;  // measure interleaved against this configuration
  double time_s = 3;  // measurement budget per configuration (warm-up is capped separately)
  // A stream's (--dim) batches a timed pass runs (shape_stream.h; a tune's brief point fewer),
  // and the batch its bucket edges are designed for (0: the batch knob's value, else 16).
  std::size_t stream_timed_batches = kFullTimedBatches;
  std::int64_t stream_batch = 0;
  // A stream's padding check (each checked sample alone against its padded batch's row). A tune's
  // brief points skip it: they only rank, and under torch.compile each sample alone is a shape
  // of its own, a recompile; any point measured in full (every finalist, the winner) runs it.
  bool check_padding = true;
  // A tune's leader so far, in samples/s (0: none): a run clearly behind it stops early
  // (SamplingOptions::leader_iteration_ns).
  double leader_samples_per_s = 0;
  // A tune's head-to-head: the pair stops once its ratio's interval excludes 1 (its verdict is
  // decided), not only at target_relative_ci (SamplingOptions::stop_when_decided).
  bool stop_when_decided = false;
  double target_relative_ci = 0.01;
  std::string device = "auto";  // auto | cpu | cuda | cuda:N
  std::uint64_t seed = 0;
  bool count_flops = true;
  // Bench's bounds. A warm call longer than time_s stops the run (INVALID) unless this is false
  // (--allow-overrun); tune's workers leave it off and are bounded by --point-timeout instead.
  bool stop_when_a_call_exceeds_time = false;
  // Resident memory the run may reach (0: no cap); inputs that alone exceed it are refused
  // before they are allocated.
  std::int64_t memory_cap_bytes = 0;
  // A torch.export program's AOTInductor compile (a Python child) stops after this long; the
  // memory cap above bounds it too. A cached package costs nothing.
  double compile_timeout_s = 1800;
  // Batch ("1", "8" … or "n/a" for an inputs file) -> a file written by save_reference: the
  // reference is read from it instead of computed (tune computes it once for all its workers).
  std::map<std::string, std::string> reference_files;
};

// Throws UsageError for contradictory or out-of-range options (a time budget <= 0, both an input
// spec and an inputs file).
void validate(const BenchOptions& options);
// Whether the workload is a stream of varying sizes: --dim, or an inputs file of samples.
bool varies_in_size(const BenchOptions& options);

}  // namespace torchperf
