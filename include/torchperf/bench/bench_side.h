// One side of a measurement: a workload loaded and prepared under one configuration, timed block
// by block, in this process (run_bench) or in a worker process that a supervisor drives (sweep's
// two-process comparisons). Both finish a side the same way, so the two cannot drift apart.
#pragma once

#include <memory>

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/measurement.h"
#include "torchperf/measure/clock.h"
#include "torchperf/measure/sampler.h"

namespace torchperf {

class BenchSide {
 public:
  // Opens the workload, reads (options.reference_files) or computes the fp32 reference at the
  // configuration's batch, and applies the configuration's one-time transforms.
  BenchSide(const BenchOptions& options, const Configuration& config, TimeSource& time);
  ~BenchSide();
  BenchSide(const BenchSide&) = delete;
  BenchSide& operator=(const BenchSide&) = delete;

  // What the sampler times. enter()/exit() set and restore this side's process-scope knobs
  // (once a measurement); block() runs and times iterations, synchronised, and counts the minor
  // page faults they cause.
  const TimedRun& run() const;
  const ResolvedConfiguration& configuration() const;
  // The measurement from samples taken with run(): throughput, latency, memory, the page faults
  // of the timed blocks after warm-up, and the output checked against the reference.
  Measurement finish(const SampleSet& samples, bool paired);

  // Defined in bench_runner.cpp only: run_bench builds its two sides on one shared reference.
  struct Impl;
  explicit BenchSide(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchperf
