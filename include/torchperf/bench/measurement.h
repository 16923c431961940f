// The result of measuring one workload under one configuration, and of comparing two. One record
// type feeds every writer (table, JSON); see docs/json-schema.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/config/configuration.h"
#include "torchperf/measure/environment.h"
#include "torchperf/measure/ratio_estimate.h"
#include "torchperf/measure/sampler.h"

namespace torchperf {

struct OutputQuality {
  bool comparable = true;
  std::string note;
  double max_abs_error = 0;
  double max_rel_error = 0;
  double cosine = 1;
  std::optional<double> top1_agreement;
  std::int64_t nonfinite_values = 0;
};

// Minor page faults per call in steady state above which the allocator is returning memory to the
// kernel and faulting it in again each call (a healthy steady state reuses its pages: ~0).
inline constexpr double kPageFaultsNearZero = 1.0;

// A stream of varying shapes (--dim): the measurement's batch is the stream's samples, and its
// samples/s are useful samples (padding is not a sample). A timed call is one pass over a sample
// of its batches drawn across its padded sizes (timed_batches of them); the stream's time is
// estimated as a pass's times pass_scale (the stream's padded tokens over theirs), so that its
// padding share and token mix are the whole stream's. Tokens are the named dimensions'
// elements, padding excluded.
struct StreamFigures {
  std::string dims;             // "S=lognormal:40:0.9:4..512"
  std::int64_t batches = 0;     // in the stream
  std::int64_t samples = 0;     // in the stream
  std::int64_t useful_tokens = 0;  // in the stream
  std::int64_t padded_tokens = 0;  // in the stream, padding included
  std::int64_t timed_batches = 0;  // per timed pass
  double pass_scale = 1;           // the stream's padded tokens over a timed pass's
  double padding_share = 0;        // of the padded tokens
  double tokens_per_s = 0;         // useful tokens per second
  // The first pass over the stream, before timing: every shape compiled, captured or allocated
  // once. A one-off cost, reported apart as a compile is; graphs: what torch.compile compiled
  // in it (0 for the C++ runtimes).
  double warm_s = -1;
  std::int64_t warm_graphs = 0;
  // Padding must not change an answer: the shortest, median and longest samples' rows of their
  // padded batches against each sample run alone, unpadded, in the same configuration. Empty
  // lengths: not checked (the Python runtimes).
  std::vector<std::int64_t> padding_check_lengths;
  OutputQuality padding_check;  // the worst of them
};

struct Measurement {
  std::string model;
  std::string inputs;        // shapes and dtypes actually fed, e.g. "Float[8,3,224,224]"
  std::string input_source;  // the spec, or "file:PATH"
  std::string device;
  std::int64_t batch = 1;  // samples per call (first dimension of the first input)
  ResolvedConfiguration configuration;
  SampleSet samples;
  bool paired = false;  // from a --vs comparison: the stopping rule was the ratio's

  double throughput_samples_per_s = 0;  // batch / median iteration time
  Interval throughput_ci;               // from the median's CI
  double latency_p50_ms = 0, latency_p90_ms = 0, latency_p99_ms = 0;
  double setup_ms = 0;  // loading + one-time transforms (freezing, an AOTInductor compile …)
  // A torch.export program: what compiling its AOTInductor package cost (-1: nothing compiled),
  // whether this run found it in the cache (and so paid nothing), and where the package is.
  double compile_s = -1;
  bool compile_cache_hit = false;
  std::string package;
  // cuda_graphs=on: what capturing the forward's CUDA graphs cost (warm-up calls included; -1:
  // nothing captured), apart from the run's time as a compile's is.
  double capture_s = -1;
  // torch.compile (runtime=python): how often Dynamo broke the graph and its first reasons;
  // each break runs Python between compiled pieces.
  std::int64_t graph_breaks = 0;
  std::vector<std::string> graph_break_reasons;
  std::int64_t rss_before_bytes = 0;
  std::int64_t peak_memory_bytes = 0;
  std::string peak_memory_kind = "process-rss";  // or "cuda-caching-allocator"
  bool peak_memory_reset = true;                 // false: the high-water mark includes earlier work
  double page_faults_per_iteration = 0;
  OutputQuality quality;
  std::uint64_t flops_per_sample = 0;
  double achieved_gflops = 0;
  std::optional<StreamFigures> stream;
  // Samples per timed call: the batch, or for a stream its samples over its pass scale (what a
  // paired ratio of two calls is converted to samples/s with).
  double samples_per_call() const;
  // What the process that ran it confirmed about itself: process knobs as seen from inside
  // (allocator and BLAS libraries loaded, OpenMP variables, inter-op threads).
  std::map<std::string, std::string> process;

  std::vector<std::string> warnings;
  std::vector<std::string> advice;  // what to try next, from what was measured (page faults …)
  bool valid = true;            // the output is sound (no NaN/Inf): tune may use the point
  std::string invalid_reason;
  // Why the timing is not conclusive, empty when it is: a call longer than the time budget, a
  // warm-up that did not settle, a stopping rule not met. Bench's verdict is INVALID then.
  std::string inconclusive_reason;
};

struct Comparison {
  Measurement a;          // the configuration asked for
  Measurement b;          // the one it is compared against (--vs)
  RatioEstimate speedup;  // A's samples/s over B's, from per-round ratios; > 1: A is faster
  StopReason stop = StopReason::kTimeBudgetSpent;
  Verdict verdict = Verdict::kUndetermined;
  bool separate_processes = false;  // each side in its own worker: they differ in process state
  // Other work in the windows of its rounds, where the pair's driver read the machine's load.
  std::optional<RoundLoad> round_load;
};

struct BenchResult {
  Environment environment;
  std::optional<Measurement> measurement;
  std::optional<Comparison> comparison;
  // VALID only when every output is sound and every timing conclusive (the stopping rule met,
  // warm-up settled); otherwise the first reason, which the verdict line prints.
  bool valid() const { return invalid_reason().empty(); }
  std::string invalid_reason() const;
};

}  // namespace torchperf
