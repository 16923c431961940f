// Measurements in worker processes started for them: one configuration whose worker knobs need a
// fresh process, and comparisons whose two sides differ in process state, each side in its own
// worker while the supervisor alternates their blocks (A B, B A, …) and keeps the samples. Used
// by `bench` and by `tune`'s head-to-head confirmations.
#pragma once

#include <functional>
#include <string>

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/bench_runner.h"
#include "torchperf/bench/measurement.h"
#include "torchperf/measure/clock.h"
#include "torchperf/worker/worker_process.h"

namespace torchperf {

// How workers are started: the torchperf binary, where their logs go, their limits (the time
// limit applies to each request: preparing a side, one block, finishing), and the supervisor's
// tick (false: stop).
class PythonWorkerPool;

struct WorkerRun {
  std::string executable;
  std::string log_dir;
  std::string log_prefix = "side";
  WatchLimits limits = within(kWorkerTimeLimitS);
  std::function<bool(double)> tick;
  // A python side takes its worker from here and gives it back once finished (a tune's Python
  // points and its comparisons' Python sides); null: a worker of its own.
  PythonWorkerPool* python_pool = nullptr;
};

// One request to the worker of a comparison's side (side: "side a (threads=1)"): a worker that
// crashed, hung or was killed is a RuntimeFailure naming the side and its log, an interruption is
// Interrupted, and an answered error is rethrown as its kind (rethrow_worker_error).
nlohmann::json ask_side(WorkerSession& worker, const nlohmann::json& request, double timeout_s,
                        const std::string& side, const std::string& log,
                        const std::string& doing);

// options.config measured in a fresh worker started with its worker knobs' environment; the
// result's environment is the worker's own.
BenchResult measure_in_worker(const BenchOptions& options, const WorkerRun& run);

// options.config against *options.vs, each side in its own worker. A worker that crashes, hangs
// or runs out of memory is a RuntimeFailure naming its side and its log; errors the worker
// answered are rethrown as their kind (rethrow_worker_error).
BenchResult compare_in_workers(const BenchOptions& options, const WorkerRun& run,
                               TimeSource& time, const BenchProgress& progress = nullptr);

}  // namespace torchperf
