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

NodeJobKind node_job_kind(const std::string& name) {
  for (auto k : {NodeJobKind::kWorker, NodeJobKind::kPython, NodeJobKind::kCompare})
    if (name == name_of(k)) return k;
  throw std::invalid_argument("not a node job: '" + name + "'");
}

}  // namespace

json to_json(const NodeJob& job) {
  return {{"kind", name_of(job.kind)},
          {"executable", job.executable},
          {"log_dir", job.log_dir},
          {"log_name", job.log_name},
          {"timeout_s", job.limits.time_limit_s},
          {"memory_cap_bytes", job.limits.memory_cap_bytes},
          {"environment", job.environment},
          {"request", job.request},
          {"workload", wire_value(job.workload)},
          {"configuration", job.configuration},
          {"versus", job.versus}};
}

NodeJob node_job_from_json(const json& j) {
  NodeJob job;
  job.kind = node_job_kind(j.at("kind").get<std::string>());
  job.executable = j.at("executable").get<std::string>();
  job.log_dir = j.at("log_dir").get<std::string>();
  job.log_name = j.at("log_name").get<std::string>();
  job.limits.time_limit_s = j.at("timeout_s").get<double>();
  job.limits.memory_cap_bytes = j.at("memory_cap_bytes").get<std::int64_t>();
  job.environment = j.at("environment").get<WorkerEnvironment>();
  job.request = j.at("request");
  read_wire(j.at("workload"), job.workload);
  job.configuration = j.at("configuration").get<std::string>();
  job.versus = j.at("versus").get<std::string>();
  return job;
}

json to_json(const WorkerOutcome& o) {
  return {{"ending", to_string(o.ending)},
          {"response", o.response},
          {"message", o.message},
          {"wall_s", o.wall_s},
          {"peak_rss_bytes", o.peak_rss_bytes}};
}

WorkerOutcome worker_outcome_from_json(const json& j) {
  WorkerOutcome o;
  o.ending = ending_named(j.at("ending").get<std::string>());
  o.response = j.at("response");
  o.message = j.at("message").get<std::string>();
  o.wall_s = j.at("wall_s").get<double>();
  o.peak_rss_bytes = j.at("peak_rss_bytes").get<std::int64_t>();
  return o;
}

WorkerOutcome run_node_job(const NodeJob& job, TimeSource& time,
                           const std::function<bool(double)>& tick) {
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
