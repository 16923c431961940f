// `lint --fix`: each rewrite that applies (the conv bias folded, int8 dynamic quantization) is a
// knob value, measured head to head against the model as given (interleaved, an interval on the
// ratio) with its output checked against the fp32 reference; the ones that pass the guard and
// win are written, together, into a new TorchScript file.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "torchperf/bench/bench_options.h"
#include "torchperf/measure/clock.h"
#include "torchperf/measure/statistics.h"
#include "torchperf/sweep/objective.h"

namespace torchperf {

struct RewriteOutcome {
  std::string change;  // "conv_bias=fold"
  std::string fixes;   // what it addresses, e.g. the lint rule
  double speedup = 1;  // rewritten over as given, samples/s
  Interval interval;
  std::string accuracy;  // "cosine 0.999998, max abs err 1e-6"
  bool passes_guard = false;
  bool kept = false;
  std::string reason;  // why not kept
};

struct FixOptions {
  BenchOptions bench;  // model, inputs, time per comparison; bench.config is the base
  AccuracyGuard guard = AccuracyGuard::default_guard();
};

// The rewrites that apply to the model: knob changes, each with what it fixes.
std::vector<std::pair<std::string, std::string>> applicable_rewrites(const BenchOptions& options);

using FixProgress = std::function<void(const std::string& change)>;

// Measures each rewrite against the base configuration, in this process (rewrites change the
// model, not process state).
std::vector<RewriteOutcome> try_rewrites(const FixOptions& options, TimeSource& time,
                                         const FixProgress& progress = nullptr);

// Where several values of one knob won (pad=8 and pad=16), keeps only the fastest; the others
// say which measured faster.
void keep_fastest_value_per_knob(std::vector<RewriteOutcome>& outcomes);

// Loads the model afresh, applies the kept rewrites (with the base configuration's model
// transforms) and saves the TorchScript file: loadable by PyTorch in Python.
void write_rewritten_model(const BenchOptions& options,
                           const std::vector<RewriteOutcome>& outcomes, const std::string& path);

}  // namespace torchperf
