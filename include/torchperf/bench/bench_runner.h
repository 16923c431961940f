// Runs one workload under one configuration (or two, interleaved) with the measurement protocol:
// fp32 reference computed once, warm-up until settled, timed blocks until the CI is tight or the
// budget is spent, then accuracy against the reference, FLOPs, memory and page faults.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <string>

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/measurement.h"
#include "torchperf/measure/clock.h"
#include "torchperf/measure/sampler.h"
#include "torchperf/feed/shape_stream.h"
#include "torchperf/models/workload_traits.h"

namespace torchperf {

// phase: "reference", "warm-up and measuring"; fraction in [0, 1] within the timed phase.
using BenchProgress = std::function<void(const std::string& phase, double fraction)>;

// "auto" (the first CUDA device, else the CPU), "cpu", "cuda", "cuda:N"; UsageError otherwise.
c10::Device resolve_device(const std::string& requested);

// One configuration, or two interleaved in this process (--vs). Two sides that differ in process
// or worker knobs cannot share a process: UsageError (sweep's run_bench_in_workers runs them).
BenchResult run_bench(const BenchOptions& options, TimeSource& time,
                      const BenchProgress& progress = nullptr);

// The sampling options a bench run uses (its time budget, warm-up cap and stopping rule).
SamplingOptions sampling_options(const BenchOptions& options);
// The same for a resolved device: on CUDA, blocks of at least kAsynchronousDeviceMinBlockTime.
SamplingOptions sampling_options(const BenchOptions& options, const c10::Device& device);
// The batch describes the workload, not a setting under comparison: --vs uses A's batch unless it
// names its own ("--batch 8 --vs baseline" is the baseline at batch 8).
BenchOptions with_shared_batch(BenchOptions options);

// The comparison of two finished sides from their interleaved samples: the speedup (in samples/s
// when the batches differ) and its verdict.
Comparison compare_sides(Measurement a, Measurement b, const PairedSampleSet& paired,
                         bool separate_processes);

// The workload as tune sees it before building a space: names and the traits knobs depend on.
struct WorkloadDescription {
  std::string model;
  std::string inputs;        // at batch 1 (or the file's batch)
  std::string input_source;  // the spec, or "file:PATH"
  WorkloadTraits traits;
};
WorkloadDescription describe(const BenchOptions& options);

// The batch a configuration runs at, as the key of BenchOptions::reference_files.
std::string reference_batch(const BenchOptions& options, const Configuration& config);

// Computes the fp32 eval/no_grad reference at one batch and writes it (outputs and FLOPs per
// sample) to path, for run_bench in other processes. With inputs_path, also the inputs it was
// computed from (a tuple of CPU tensors), so that another runtime runs on the same tensors.
void save_reference(const BenchOptions& options, const std::string& batch,
                    const std::string& path, const std::string& inputs_path = "");

// A workload with named dimensions (--dim): its stream's batches at the configuration's batch,
// padding and batching, written to path (a torch.save tuple of tuples of CPU tensors) for the
// Python worker, which runs the same samples; and the padding check's samples, unpadded, to
// check_path (a tuple of (batch index, tuple of tensors)). Nothing (and no file) for fixed shapes.
struct SavedStream {
  StreamFigures figures;
  std::vector<StreamSlot> check_slots;
};
std::optional<SavedStream> save_stream(const BenchOptions& options,
                                       const ResolvedConfiguration& config, const std::string& path,
                                       const std::string& check_path);

}  // namespace torchperf
