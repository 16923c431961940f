// Runs one workload under one configuration (or two, interleaved) with the measurement protocol:
// fp32 reference computed once, warm-up until settled, timed blocks until the CI is tight or the
// budget is spent, then accuracy against the reference, FLOPs, memory and page faults.
#pragma once

#include <functional>
#include <string>

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/measurement.h"
#include "torchperf/measure/clock.h"

namespace torchperf {

// phase: "reference", "warm-up and measuring"; fraction in [0, 1] within the timed phase.
using BenchProgress = std::function<void(const std::string& phase, double fraction)>;

BenchResult run_bench(const BenchOptions& options, TimeSource& time,
                      const BenchProgress& progress = nullptr);

}  // namespace torchperf
