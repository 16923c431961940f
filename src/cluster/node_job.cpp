#include "torchperf/cluster/node_job.h"

#include <unistd.h>

#include <filesystem>

#include "torchperf/bench/measurement_json.h"
#include "torchperf/error.h"
#include "torchperf/measure/environment.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/python_worker.h"
#include "torchperf/worker/worker.h"

namespace torchperf {

using nlohmann::json;

namespace {

const char* name_of(NodeJobKind kind) {
  switch (kind) {
    case NodeJobKind::kWorker: return "worker";
    case NodeJobKind::kPython: return "python";
    case NodeJobKind::kCompare: return "compare";
  }
  return "worker";
}

}  // namespace

json wire_value(const NodeJobKind& kind) { return name_of(kind); }

void read_wire(const json& j, NodeJobKind& kind) {
  const std::string name = j.get<std::string>();
  for (auto k : {NodeJobKind::kWorker, NodeJobKind::kPython, NodeJobKind::kCompare})
    if (name == name_of(k)) {
      kind = k;
      return;
    }
  throw std::invalid_argument("not a node job: '" + name + "'");
}

json to_json(const NodeJob& job) { return to_message(job); }

NodeJob node_job_from_json(const json& j) {
  NodeJob job;
  from_message(j, job, "the node job");
  return job;
}

json to_json(const WorkerOutcome& o) { return to_message(o); }

WorkerOutcome worker_outcome_from_json(const json& j) {
  WorkerOutcome o;
  from_message(j, o, "the node job's outcome");
  return o;
}

void add_node_job_schema(json& schema) {
  schema["node_job"] = message_schema<NodeJob>();
  schema["node_outcome"] = message_schema<WorkerOutcome>();
}

WorkerOutcome run_node_job(const NodeJob& job, TimeSource& time,
                           const std::function<bool(double)>& tick,
                           PythonWorkerPool* python_pool) {
  std::filesystem::create_directories(job.log_dir);
  if (job.kind == NodeJobKind::kWorker)
    return run_worker_process(job.executable, job.request, job.limits,
                              job.log_dir + "/" + job.log_name + ".log", tick, job.environment);
  WorkerRun run;
  run.executable = job.executable;
  run.log_dir = job.log_dir;
  run.log_prefix = job.log_name;
  run.limits = job.limits;
  run.tick = tick;
  if (job.kind != NodeJobKind::kWorker && job.shared) run.python_pool = python_pool;
  const auto started = time.now();
  WorkerOutcome out;
  try {
    BenchOptions workload = job.workload;
    workload.config = Configuration::parse(job.configuration);
    if (job.kind == NodeJobKind::kCompare) workload.vs = Configuration::parse(job.versus);
    const BenchResult result = job.kind == NodeJobKind::kPython
                                   ? measure_python_in_worker(workload, run, time)
                                   : compare_in_workers(workload, run, time);
    out.response = to_reply(MeasureReply{result});
  } catch (const Interrupted&) {
    out.ending = Ending::kStopped;
    out.message = "stopped";
  } catch (...) {
    out.response = reply_for_current_exception();  // a failed point, with its kind
  }
  out.wall_s = to_seconds(time.now() - started);
  return out;
}

json probe_node(const std::vector<std::string>& paths) {
  json missing = json::array();
  for (const auto& path : paths)
    if (::access(path.c_str(), R_OK) != 0) missing.push_back(path);
  return {{"environment", to_json(capture_environment())}, {"missing", missing}};
}

}  // namespace torchperf
