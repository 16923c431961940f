#include "torchperf/cluster/ray_cluster.h"

#include "torchperf/cluster/ray_bridge_messages.h"

#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "torchperf/bench/measurement_json.h"
#include "torchperf/cluster/machine_class.h"
#include "torchperf/error.h"
#include "torchperf/models/python_side.h"

namespace torchperf {

using nlohmann::json;

namespace {

std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of("\r\n ");
  if (end == std::string::npos) return "";
  const std::size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

// Why HOST:PORT is not one ("" when it is): Ray waits half a minute on an address it cannot
// parse before it says so, so its shape is checked here.
std::string host_port_problem(const std::string& where) {
  const std::size_t colon = where.rfind(':');
  if (colon == std::string::npos || colon == 0) return "no HOST:PORT";
  const std::string host = where.substr(0, colon), port = where.substr(colon + 1);
  if (host.find_first_of("/ \t@?#") != std::string::npos) return "the host '" + host + "' is not one";
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stol(port) < 1 ||
      std::stol(port) > 65535)
    return "the port '" + port + "' is not a number from 1 to 65535";
  return "";
}

std::string checked_address(const std::string& address, const std::string& where,
                            const std::string& given_as) {
  if (const std::string problem = host_port_problem(where); !problem.empty())
    throw UsageError(given_as + " '" + address + "': " + problem +
                     "; expected ray://HOST:PORT (Ray Client) or HOST:PORT (the head's GCS)");
  return address;
}

}  // namespace

std::string ray_address_of(const std::string& cluster, const std::string& ray_address_variable) {
  if (cluster.rfind("ray://", 0) == 0 && cluster.size() > 6)
    return checked_address(cluster, cluster.substr(6), "--cluster");
  if (cluster.rfind("ray:", 0) == 0 && cluster.size() > 4 && cluster.find("//") == std::string::npos)
    return checked_address(cluster, cluster.substr(4), "--cluster").substr(4);
  if (cluster == "ray") {
    // RAY_ADDRESS may also be Ray's own "auto" (the cluster this machine is part of).
    if (ray_address_variable == "auto") return ray_address_variable;
    if (!ray_address_variable.empty())
      return checked_address(ray_address_variable,
                             ray_address_variable.rfind("ray://", 0) == 0
                                 ? ray_address_variable.substr(6)
                                 : ray_address_variable,
                             "RAY_ADDRESS");
    throw UsageError(
        "--cluster ray: no cluster named: set RAY_ADDRESS (e.g. RAY_ADDRESS=HEAD:6379, as `ray "
        "start --head` prints it) or give --cluster ray://HEAD:10001; start one with `ray start "
        "--head --resources='{\"torchperf_slot\": 1}'` on one machine and `ray start "
        "--address=HEAD:6379 --resources='{\"torchperf_slot\": 1}'` on each other (docs/cluster.md)");
  }
  throw UsageError("--cluster '" + cluster +
                   "': expected ray (the cluster at $RAY_ADDRESS), ray://HOST:PORT or ray:HOST:PORT");
}

std::string ClusterNode::label() const {
  return fmt::format("{} ({}, node {})", hostname.empty() ? "?" : hostname, address,
                     id.substr(0, 8));
}

RayCluster::RayCluster(const std::string& address, const std::string& log_path, TimeSource& time)
    : address_(address), log_path_(log_path), time_(time) {
  ChildSpec spec;
  spec.executable = python_interpreter();
  spec.args = {"-m", "torchperf.ray_bridge", address};
  spec.environment = with_python_path({});
  spec.log_path = log_path;
  spec.pipe_stdin = true;
  spec.pipe_stdout = true;
  bridge_ = std::make_unique<WatchedChild>(spec);
  // The driver says at once when nothing answers at the address; Ray Client's connection is
  // tried up to three times, each up to about half a minute.
  from_op<RayReady>(read_op(RayReady::kOp, 150));
}

RayCluster::~RayCluster() {
  if (!bridge_) return;
  try {
    bridge_->close_input();  // the driver cancels its tasks and disconnects
    bridge_->end(10);
  } catch (...) {
    bridge_->kill();
  }
}

void RayCluster::send(const json& message) {
  if (!bridge_->write(message.dump() + "\n"))
    throw ClusterError("the Ray driver of the cluster at " + address_ +
                         " has ended (log: " + log_path_ + ")");
}

std::optional<json> RayCluster::read_line(double timeout_s) {
  const auto started = time_.now();
  for (;;) {
    if (const std::size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      const std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (line.empty()) continue;
      try {
        return json::parse(line);
      } catch (const json::exception&) {
        continue;  // not ours: Ray's stray prints go to the log, but be safe
      }
    }
    const double left = timeout_s - seconds_since(started);
    if (left <= 0) return std::nullopt;
    pollfd p{bridge_->output_fd(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min(left, 0.2) * 1000) + 1);
    if (ready < 0 && errno != EINTR) throw ClusterError("polling the Ray driver failed");
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(bridge_->output_fd(), chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      throw ClusterError("the Ray driver of the cluster at " + address_ +
                           " ended unexpectedly (log: " + log_path_ + ")");
    }
  }
}

json RayCluster::read_op(const std::string& op, double timeout_s) {
  const auto started = time_.now();
  for (;;) {
    const double left = timeout_s - seconds_since(started);
    std::optional<json> message = left > 0 ? read_line(left) : std::nullopt;
    if (!message)
      throw ClusterError(fmt::format("the Ray driver did not answer '{}' within {:.0f} s (log: {})",
                                       op, timeout_s, log_path_));
    const std::string got = message->value("op", "");
    if (got == op) return *message;
    if (got == RayError::kOp) throw ClusterError(from_op<RayError>(*message).message);
    if (got == RayDone::kOp) early_.push_back(std::move(*message));
  }
}

std::vector<ClusterNode> RayCluster::nodes(const std::vector<std::string>& probe) {
  send(to_op(RayNodesOp{probe}));
  const RayNodes answer = from_op<RayNodes>(read_op(RayNodes::kOp, 300));
  std::vector<ClusterNode> out;
  for (const RayNode& n : answer.nodes) {
    ClusterNode node;
    node.id = n.id;
    node.address = n.address;
    node.hostname = n.hostname;
    node.slots = n.slots;
    if (node.slots < 1) {
      node.unusable = "it has no torchperf_slot resource (start it with --resources='{\"torchperf_slot\": 1}')";
    } else if (!n.probe_error.empty()) {
      node.unusable = "its probe failed: " + n.probe_error;
    } else if (n.probed) {
      const RayTaskRun& p = n.probe;
      try {
        const json printed = json::parse(last_line(p.stdout_text));
        node.environment = printed.at("environment");
        node.machine_class = machine_class_of(environment_from_json(node.environment));
        for (const auto& path : printed.at("missing"))
          node.unusable += (node.unusable.empty() ? "it cannot read " : ", ") + path.get<std::string>();
        if (!node.unusable.empty()) node.unusable += " (every node sees the driver's paths: docs/cluster.md)";
      } catch (const std::exception&) {
        node.unusable = fmt::format("torchperf did not run there (exit {}): {}", p.rc,
                                    last_line(p.stderr_text));
      }
    }
    out.push_back(std::move(node));
  }
  return out;
}

void RayCluster::submit(const std::string& id, const std::string& node,
                        const std::vector<std::string>& argv, const std::string& stdin_text) {
  send(to_op(RaySubmitOp{id, node, argv, stdin_text}));
}

std::vector<json> RayCluster::wait(double timeout_s) {
  std::vector<json> out = std::move(early_);
  early_.clear();
  const auto started = time_.now();
  double left = out.empty() ? timeout_s : 0;
  for (;;) {
    std::optional<json> message = read_line(std::max(0.0, left));
    if (!message) return out;
    if (message->value("op", "") == RayDone::kOp) out.push_back(std::move(*message));
    left = out.empty() ? timeout_s - seconds_since(started) : 0;
  }
}

void RayCluster::cancel_all() {
  send(to_op(RayCancelOp{}));
  from_op<RayCancelled>(read_op(RayCancelled::kOp, 60));
}

// ---- NodePool

NodePool::NodePool(RayCluster& cluster, std::vector<ClusterNode> nodes, std::string executable,
                   TimeSource& time)
    : cluster_(cluster), time_(time), nodes_(std::move(nodes)), executable_(std::move(executable)) {}

std::size_t NodePool::idle() const {
  const std::size_t free = nodes_.size() - std::min(nodes_.size(), busy_.size());
  return free - std::min(free, retries_.size());
}

std::optional<std::string> NodePool::idle_node() const {
  for (const auto& n : nodes_)
    if (!busy_.count(n.id)) return n.id;
  return std::nullopt;
}

std::string NodePool::label_of(const std::string& node) const {
  for (const auto& n : nodes_)
    if (n.id == node) return n.label();
  return "node " + node.substr(0, 8);
}

std::string NodePool::start(const NodeJob& job) {
  const auto node = idle_node();
  if (!node || idle() == 0) throw std::logic_error("NodePool::start: no idle node");
  const std::string ticket = "job-" + std::to_string(next_ticket_++);
  Running r;
  r.job = job;
  r.node = *node;
  launch(ticket, std::move(r));
  return ticket;
}

NodeJobResult NodePool::result_of(const std::string& ticket, const Running& r) const {
  NodeJobResult result;
  result.ticket = ticket;
  result.node = r.node;
  result.node_label = r.node_label;
  result.attempts = r.attempts;
  result.lost = r.lost;
  return result;
}

void NodePool::launch(const std::string& ticket, Running running) {
  running.started = time_.now();
  running.node_label = label_of(running.node);  // kept: a lost node leaves the pool
  cluster_.submit(ticket, running.node, {executable_, "__node-job"}, to_json(running.job).dump());
  busy_[running.node] = ticket;
  jobs_[ticket] = std::move(running);
}

std::vector<NodeJobResult> NodePool::wait(double timeout_s) {
  std::vector<NodeJobResult> out;
  const auto fail_lost = [&](const std::string& ticket, const Running& r, const std::string& why) {
    NodeJobResult result = result_of(ticket, r);
    result.outcome.ending = Ending::kCrashed;
    result.outcome.message = why;
    out.push_back(std::move(result));
  };
  // Retries first, on a node of the pool other than the one lost (it has left the pool).
  while (!retries_.empty()) {
    if (nodes_.empty()) {
      for (const auto& [ticket, r] : retries_)
        fail_lost(ticket, r, "its node was lost (" + r.lost + ") and no node of its class is left");
      retries_.clear();
      break;
    }
    const auto node = idle_node();
    if (!node) break;
    auto [ticket, r] = std::move(retries_.front());
    retries_.erase(retries_.begin());
    r.node = *node;
    launch(ticket, std::move(r));
  }
  for (const json& line : cluster_.wait(timeout_s)) {
    const std::string id = line.value("id", "");
    const auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;  // not an answer to a job of ours
    RayDone done;
    try {
      done = from_op<RayDone>(line);
    } catch (const WorkerProtocolError& e) {
      // A job whose answer does not read ends with that failure, never waited for forever.
      Running r = std::move(it->second);
      jobs_.erase(it);
      busy_.erase(r.node);
      fail_lost(id, r, e.what());
      continue;
    }
    Running r = std::move(it->second);
    jobs_.erase(it);
    busy_.erase(r.node);
    const double driver_s = seconds_since(r.started);
    if (done.lost && !cancelling_) {
      const std::string why = r.node_label + ": " + (done.error.empty() ? "lost" : done.error);
      nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(),
                                  [&](const ClusterNode& n) { return n.id == r.node; }),
                   nodes_.end());
      if (r.attempts == 1 && !nodes_.empty()) {
        r.attempts = 2;
        r.lost = why;
        if (const auto node = idle_node()) {
          r.node = *node;
          launch(done.id, std::move(r));
        } else {
          retries_.emplace_back(done.id, std::move(r));
        }
        continue;
      }
      fail_lost(done.id, r,
                r.attempts == 1 ? "its node was lost (" + why + ") and no node of its class is left"
                                : "its node was lost twice (" + r.lost + "; then " + why + ")");
      continue;
    }
    NodeJobResult result = result_of(done.id, r);
    if (done.cancelled || done.lost) {
      result.outcome.ending = Ending::kStopped;
      result.outcome.message = "stopped";
    } else {
      try {
        result.outcome = worker_outcome_from_json(json::parse(last_line(done.run.stdout_text)));
        result.dispatch_s = std::max(0.0, driver_s - result.outcome.wall_s);
        result.outcome.wall_s = driver_s;  // what the point cost the tune
      } catch (const std::exception&) {
        result.outcome.ending = Ending::kCrashed;
        // A negative status is the signal that ended it (Ray's convention); its log may be empty.
        const std::string said = last_line(done.run.stderr_text);
        result.outcome.message = fmt::format(
            "torchperf __node-job on {} {} without an answer{}", result.node_label,
            done.run.rc < 0 ? fmt::format("was killed by signal {}", -done.run.rc)
                            : fmt::format("exited with status {}", done.run.rc),
            said.empty() ? " (it wrote nothing to stderr)" : ": " + said);
      }
    }
    out.push_back(std::move(result));
  }
  return out;
}

NodeJobResult NodePool::run(const NodeJob& job, const std::function<bool(double)>& tick) {
  const auto started = time_.now();
  const std::string ticket = start(job);
  for (;;) {
    for (auto& r : wait(0.05))
      if (r.ticket == ticket) return std::move(r);
    if (tick && !tick(seconds_since(started))) {
      cancel_all();
      NodeJobResult r;
      r.ticket = ticket;
      r.outcome.ending = Ending::kStopped;
      r.outcome.message = "stopped";
      return r;
    }
  }
}

void NodePool::cancel_all() {
  if (jobs_.empty() && retries_.empty()) return;
  retries_.clear();
  cancelling_ = true;
  cluster_.cancel_all();
  const auto started = time_.now();
  while (!jobs_.empty() && seconds_since(started) < 30) wait(0.2);
  for (const auto& [ticket, r] : jobs_) busy_.erase(r.node);
  jobs_.clear();
  cancelling_ = false;
}

RayJobRunner::RayJobRunner(const RayConnection& c, TimeSource& time, JobTick tick)
    : JobRunner(std::move(tick)) {
  cluster_ = std::make_unique<RayCluster>(c.address, c.out_dir + "/workers/ray-driver.log", time);
  std::vector<std::string> probe = {c.executable, "__node-probe", c.out_dir};
  probe.insert(probe.end(), c.paths.begin(), c.paths.end());
  std::map<std::string, std::vector<ClusterNode>> by_class;
  std::vector<std::string> classes;  // in the order the cluster lists them
  json left_out = json::array();
  for (const auto& n : cluster_->nodes(probe)) {
    if (!n.unusable.empty()) {
      left_out.push_back(n.label() + ": " + n.unusable);
      continue;
    }
    if (!by_class.count(n.machine_class)) classes.push_back(n.machine_class);
    by_class[n.machine_class].push_back(n);
  }
  if (classes.empty()) {
    std::string why;
    for (const auto& l : left_out) why += (why.empty() ? "" : "; ") + l.get<std::string>();
    throw ClusterError("no node of the Ray cluster at " + c.address + " can measure a point: " +
                       (why.empty() ? std::string("it has no node") : why));
  }
  // Timings compare only within a machine class: the class with the most nodes is tuned, the
  // others are left out (a tune of their own ranks them).
  std::string chosen = classes.front();
  for (const auto& k : classes)
    if (by_class[k].size() > by_class[chosen].size()) chosen = k;
  for (const auto& k : classes)
    if (k != chosen)
      for (const auto& n : by_class[k])
        left_out.push_back(n.label() + ": another machine class (" +
                           machine_class_difference(chosen, k) +
                           "): points are ranked only within one class; tune it on its own");
  machines_.machine_class = chosen;
  machines_.environment = environment_from_json(by_class[chosen].front().environment);
  json labels = json::array();
  std::string names;
  for (const auto& n : by_class[chosen]) {
    labels.push_back(n.label());
    names += (names.empty() ? "" : ", ") + n.label();
  }
  pool_ = std::make_unique<NodePool>(*cluster_, by_class[chosen], c.executable, time);
  machines_.record = {
      {"address", c.address}, {"machine_class", chosen}, {"nodes", labels}, {"left_out", left_out}};
  machines_.plan = fmt::format(
      "on the Ray cluster at {}: {} node(s) of one machine class, one point per node at a time "
      "({}; {})",
      c.address, labels.size(), names, chosen);
  for (const auto& l : left_out) {
    machines_.notes.push_back("cluster node left out: " + l.get<std::string>());
    machines_.plan += "; left out: " + l.get<std::string>();
  }
}

namespace {

JobEnd job_end_of(NodeJobResult r) {
  JobEnd end;
  end.ticket = std::move(r.ticket);
  end.outcome = std::move(r.outcome);
  end.node_label = std::move(r.node_label);
  end.dispatch_s = r.dispatch_s;
  end.lost = std::move(r.lost);
  return end;
}

}  // namespace

std::vector<JobEnd> RayJobRunner::wait(double timeout_s) {
  std::vector<JobEnd> out;
  for (NodeJobResult& r : pool_->wait(timeout_s)) out.push_back(job_end_of(std::move(r)));
  return out;
}

JobEnd RayJobRunner::run(const NodeJob& job) { return job_end_of(pool_->run(job, tick_)); }

}  // namespace torchperf

namespace torchperf {

void add_ray_bridge_schema(json& schema) {
  json& bridge = schema["ray_bridge"];
  bridge["to_driver"] = {{RayNodesOp::kOp, message_schema<RayNodesOp>()},
                         {RaySubmitOp::kOp, message_schema<RaySubmitOp>()},
                         {RayCancelOp::kOp, message_schema<RayCancelOp>()}};
  bridge["from_driver"] = {{RayReady::kOp, message_schema<RayReady>()},
                           {RayError::kOp, message_schema<RayError>()},
                           {RayNodes::kOp, message_schema<RayNodes>()},
                           {RayDone::kOp, message_schema<RayDone>()},
                           {RayCancelled::kOp, message_schema<RayCancelled>()}};
  bridge["node"] = message_schema<RayNode>();
  bridge["task_run"] = message_schema<RayTaskRun>();
}

}  // namespace torchperf
