// The operations between tune and its Ray driver (python/torchperf/ray_bridge.py): JSON lines,
// each with its "op", requests on the driver's stdin and answers on its stdout. One field list
// per operation, as the worker protocol's: written, read (WorkerProtocolError naming the field)
// and listed in `torchperf __protocol`, which the Python side's tests check it follows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/worker/protocol.h"

namespace torchperf {

// To the driver.
struct RayNodesOp {  // every alive node, each probed with argv where it has a slot
  static constexpr const char* kOp = "nodes";
  std::vector<std::string> probe;
  template <typename V>
  void fields(V& v) {
    v("probe", probe);
  }
};
struct RaySubmitOp {  // a job as a Ray task on the node named
  static constexpr const char* kOp = "submit";
  std::string id, node;
  std::vector<std::string> argv;
  std::string stdin_text;
  template <typename V>
  void fields(V& v) {
    v("id", id);
    v("node", node);
    v("argv", argv);
    v("stdin", stdin_text);
  }
};
struct RayCancelOp {  // every task still running is cancelled (its process tree dies)
  static constexpr const char* kOp = "cancel";
  template <typename V>
  void fields(V&) {}
};

// From the driver.
struct RayReady {  // connected
  static constexpr const char* kOp = "ready";
  std::string ray;  // Ray's version
  template <typename V>
  void fields(V& v) {
    v("ray", ray);
  }
};
struct RayError {  // it could not connect (the driver then exits 2)
  static constexpr const char* kOp = "error";
  std::string message;
  template <typename V>
  void fields(V& v) {
    v("message", message);
  }
};
// What ran on a node: the probe, or a job's task.
struct RayTaskRun {
  std::int64_t rc = -1;
  std::string stdout_text, stderr_text;
  double wall_s = 0;
  std::string node, hostname;
  template <typename V>
  void fields(V& v) {
    v("rc", rc);
    v("stdout", stdout_text);
    v("stderr", stderr_text);
    v("wall_s", wall_s);
    v("node", node);
    v("hostname", hostname);
  }
};
struct RayNode {
  std::string id, address, hostname;
  double slots = 0;            // its torchperf_slot resources
  bool probed = false;         // the probe ran there (probe holds what it printed)
  RayTaskRun probe;
  std::string probe_error;     // why the probe did not run ("" when it did, or none was asked)
  template <typename V>
  void fields(V& v) {
    v("id", id);
    v("address", address);
    v("hostname", hostname);
    v("slots", slots);
    v("probed", probed);
    v("probe", probe);
    v("probe_error", probe_error);
  }
};
struct RayNodes {
  static constexpr const char* kOp = "nodes";
  std::vector<RayNode> nodes;
  template <typename V>
  void fields(V& v) {
    v("nodes", nodes);
  }
};
// A job's end: ok with what its task printed; or lost (the node or its Ray worker died before it
// answered), or cancelled, with why.
struct RayDone {
  static constexpr const char* kOp = "done";
  std::string id;
  bool ok = false, lost = false, cancelled = false;
  std::string error;
  RayTaskRun run;
  template <typename V>
  void fields(V& v) {
    v("id", id);
    v("ok", ok);
    v("lost", lost);
    v("cancelled", cancelled);
    v("error", error);
    v("run", run);
  }
};
struct RayCancelled {
  static constexpr const char* kOp = "cancelled";
  std::int64_t tasks = 0;
  template <typename V>
  void fields(V& v) {
    v("tasks", tasks);
  }
};

// Nested records travel as objects of their own fields.
inline nlohmann::json wire_value(const RayTaskRun& r) { return to_message(r); }
inline void read_wire(const nlohmann::json& j, RayTaskRun& r) { from_message(j, r, "a task's run"); }
inline std::string wire_type(const RayTaskRun*) { return "task-run"; }
inline nlohmann::json wire_value(const RayNode& n) { return to_message(n); }
inline void read_wire(const nlohmann::json& j, RayNode& n) { from_message(j, n, "a node"); }
inline std::string wire_type(const RayNode*) { return "node"; }
inline nlohmann::json wire_value(const std::vector<RayNode>& nodes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& n : nodes) out.push_back(wire_value(n));
  return out;
}
inline void read_wire(const nlohmann::json& j, std::vector<RayNode>& nodes) {
  nodes.clear();
  for (const auto& n : j) read_wire(n, nodes.emplace_back());
}

// An operation's line: {"op": NAME, fields…}, and back (WorkerProtocolError naming the field).
template <typename M>
nlohmann::json to_op(const M& message) {
  nlohmann::json j = to_message(message);
  j["op"] = M::kOp;
  return j;
}
template <typename M>
M from_op(const nlohmann::json& j) {
  M message;
  from_message(j, message, std::string("the Ray driver's '") + M::kOp + "'");
  return message;
}

// Every operation's fields, by direction, for `torchperf __protocol` ("ray_bridge").
void add_ray_bridge_schema(nlohmann::json& schema);

}  // namespace torchperf
