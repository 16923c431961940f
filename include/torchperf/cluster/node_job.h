// One job of a tune run on the machine that runs it: a point's worker, a Python point, or a head
// to head. Run here for a local tune, and on a cluster's node by `torchperf __node-job`, which reads
// the job as JSON on stdin and prints the outcome: the same worker, protocol and limits either way.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/bench/bench_options.h"
#include "torchperf/measure/clock.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/python_worker.h"
#include "torchperf/worker/worker_process.h"

namespace torchperf {

enum class NodeJobKind {
  kWorker,   // one request to a fresh worker (describe, reference, a C++ point)
  kPython,   // a point of the Python runtime, timed block by block here
  kCompare,  // configuration against versus, each side in its own worker, alternated here
};

struct NodeJob {
  NodeJobKind kind = NodeJobKind::kWorker;
  std::string executable;  // the torchperf binary that serves `__worker`
  std::string log_dir, log_name;
  WatchLimits limits = within(kWorkerTimeLimitS);
  WorkerEnvironment environment;  // kWorker: the worker knobs' variables
  nlohmann::json request;         // kWorker: the worker's request
  BenchOptions workload;          // kPython, kCompare (its references included)
  std::string configuration, versus;
  // Here it may share a warm worker with the points before it while their process state is the
  // same (kWorker, a brief point: SharedWorker; kPython, any point, and kCompare's Python sides:
  // PythonWorkerPool, the interpreter, the program and its compiled graphs kept); a node runs
  // every job in a fresh worker.
  bool shared = false;
  // Its wire form (`torchperf __protocol` lists it as "node_job"; protocol.h's visitors).
  template <typename V>
  void fields(V& v) {
    v("kind", kind);
    v("executable", executable);
    v("log_dir", log_dir);
    v("log_name", log_name);
    v("timeout_s", limits.time_limit_s);
    v("memory_cap_bytes", limits.memory_cap_bytes);
    v("environment", environment);
    v("request", request);
    v("workload", workload);
    v("configuration", configuration);
    v("versus", versus);
    v("shared", shared);
  }
};

nlohmann::json wire_value(const NodeJobKind& kind);
void read_wire(const nlohmann::json& j, NodeJobKind& kind);
inline std::string wire_type(const NodeJobKind*) { return "node-job-kind"; }

nlohmann::json to_json(const NodeJob& job);
NodeJob node_job_from_json(const nlohmann::json& j);  // WorkerProtocolError naming the field
nlohmann::json to_json(const WorkerOutcome& outcome);
WorkerOutcome worker_outcome_from_json(const nlohmann::json& j);  // WorkerProtocolError
// The node job's and its outcome's fields, for `torchperf __protocol`.
void add_node_job_schema(nlohmann::json& schema);

// Runs the job on this machine. A kPython or kCompare job answers like a worker: a measure reply
// {"ok": true, "result": BenchResult} or an error reply with its kind; an interruption (tick said
// to stop) is kStopped. A shared kPython job, or a shared kCompare job's Python sides, take
// their Python workers from python_pool, when given, and give them back.
WorkerOutcome run_node_job(const NodeJob& job, TimeSource& time,
                           const std::function<bool(double)>& tick = nullptr,
                           PythonWorkerPool* python_pool = nullptr);

// What `torchperf __node-probe PATH...` prints on a node before it is given a point: its
// environment (capture_environment) and which of the paths the driver's jobs name it cannot read.
nlohmann::json probe_node(const std::vector<std::string>& paths);

}  // namespace torchperf
