// The Python runtime (runtime=python): a configuration run by PyTorch in the .venv's Python, eager
// or under torch.compile, in a worker of its own (python/torchperf/worker.py). This process times
// it block by block with the same sampler as a C++ side, and judges its outputs against the same
// fp32 reference, computed from the same inputs: the runtimes differ in who runs the model, not in
// how it is measured.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/bench/bench_options.h"
#include "torchperf/bench/measurement_parts.h"
#include "torchperf/config/configuration.h"
#include "torchperf/bench/bench_runner.h"
#include "torchperf/bench/measurement.h"
#include "torchperf/measure/clock.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/worker/protocol.h"

namespace torchperf {

// Python workers kept between a tune's brief points that share their process state (the
// interpreter and the environment it starts with, the threads, the backend flags a side sets
// process-wide): the interpreter, torch, the
// loaded program and torch.compile's compiled graphs are paid once, not per point (issue 60):
// points, finalists and the sides of head-to-head pairs alike.
class PythonWorkerPool {
 public:
  // An idle worker started for `key` that is still running, or null.
  std::unique_ptr<WorkerSession> take(const std::string& key);
  void give_back(const std::string& key, std::unique_ptr<WorkerSession> worker);
  // Ends the idle workers: nothing idle sits beside a measurement of its own.
  void clear() { idle_.clear(); }
  // Workers started for the pool, for their logs' names and the summary.
  std::size_t next_number() { return ++started_; }
  std::size_t started() const { return started_; }

 private:
  // One idle worker a key: points run one at a time, and a pair's two Python sides of one
  // process state share one worker (PythonSide's host).
  static constexpr std::size_t kIdlePerKey = 1;
  std::multimap<std::string, std::unique_ptr<WorkerSession>> idle_;
  std::size_t started_ = 0;
};

// One side run by the Python worker, for a measurement or one side of a comparison: prepared
// in its worker on construction (the model loaded, the settings applied, the first call, which
// compiles under torch.compile), then timed block by block, then finished.
class PythonSide {
 public:
  // name tells its log and files apart ("python", "a", "b"). The requested configuration names
  // runtime=python; it is resolved for that runtime here. host: the other side of a tune's
  // head-to-head, or null; where it has this side's process state, this side opens in its worker
  // (the graphs the sweep compiled there are not compiled again) and must not outlive it.
  PythonSide(const BenchOptions& options, const Configuration& requested, const WorkerRun& run,
             const std::string& name, const BenchProgress& progress = nullptr,
             PythonSide* host = nullptr);
  ~PythonSide();
  PythonSide(const PythonSide&) = delete;
  PythonSide& operator=(const PythonSide&) = delete;

  // What the sampler times; peer (the other side of a comparison, or null) is stopped meanwhile.
  TimedRun timed_run(WorkerSession* peer);
  // The measurement: the samples, the worker's set-up and memory facts, the steady state's page
  // faults, and one more call's outputs checked against the reference.
  Measurement finish(const SampleSet& samples, const SamplingOptions& sampling, bool paired);
  // Samples per timed block iteration (a stream's pass weighs less than the stream).
  double samples_per_call() const { return base_.samples_per_call(); }
  WorkerSession& worker() { return *session_; }
  // Whether this side opened in its host's worker.
  bool shares_worker() const { return worker_ == nullptr; }

 private:
  nlohmann::json ask(const nlohmann::json& request, const std::string& doing);
  std::unique_ptr<WorkerSession> start_worker(const WorkerRun& run,
                                              const ChildEnvironment& environment);

  BenchOptions options_;
  ResolvedConfiguration config_;
  std::string dir_, tag_, log_, name_;
  std::string stream_file_;  // the stream's batches, written for the worker; removed at the end
  std::string check_file_;   // the padding check's samples, unpadded; removed at the end
  std::vector<StreamSlot> check_slots_;
  double timeout_s_ = 0;
  SavedOutputs expected_;
  Measurement base_;  // what is known before timing
  std::vector<std::pair<std::size_t, std::int64_t>> blocks_;  // iterations, minor page faults
  std::unique_ptr<WorkerSession> worker_;  // null where the side opened in its host's worker
  WorkerSession* session_ = nullptr;       // the worker it runs in: its own, or its host's
  std::int64_t slot_ = 0;                  // its slot in that worker
  PythonWorkerPool* pool_ = nullptr;       // where worker_ goes back once finished
  std::string pool_key_;                   // its process state
  bool finished_ = false;
};

// The python-side request for a configuration (the model as Python loads it, the settings), but
// its inputs, stream, slot and artefacts' file, which are the caller's; and the environment its
// worker starts with (the worker knobs', the Python path, Inductor's cache shared per program).
// What a tune's Python point and a served Python model (python_served_model.h) share.
PythonSideRequest python_side_request(const BenchOptions& options,
                                      const ResolvedConfiguration& config,
                                      const WorkloadTraits& traits);
ChildEnvironment python_side_environment(const BenchOptions& options,
                                         const ResolvedConfiguration& config,
                                         const Configuration& requested,
                                         const WorkloadTraits& traits);

// options.config names runtime=python; its other knobs are resolved for that runtime (graph
// eager | compile | compile-max-autotune …). The model is a torch.export program or TorchScript
// (a built-in is saved as TorchScript for Python to load). The reference at the configuration's
// batch comes from options.reference_files when its inputs file lies beside it (REF.inputs.pt),
// else it is computed here. Worker failures are RuntimeFailure naming the log; the errors the
// worker answers keep their kind (a failed torch.compile is a CompileError).
// The sampling of a measurement with a Python side: blocks of at least kPythonWorkerMinBlockTime.
SamplingOptions python_sampling(SamplingOptions sampling);

BenchResult measure_python_in_worker(const BenchOptions& options, const WorkerRun& run,
                                     TimeSource& time, const BenchProgress& progress = nullptr);

// The inputs file beside a reference file (save_reference's inputs_path in tune).
std::string inputs_beside(const std::string& reference_path);
// Where a Python side writes torch.compile's cache artifacts (torch.compiler.save_cache_artifacts)
// of what it compiled: LOG_DIR/LOG_PREFIX.compile_cache.bin.
std::string compile_artifacts_path(const std::string& log_dir, const std::string& log_prefix);

}  // namespace torchperf
