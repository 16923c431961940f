// A tune's jobs on a Ray cluster. RayCluster is the link: the Ray driver (python/torchperf/
// ray_bridge.py) as a child of this process, which places each job as a Ray task on the node it
// names, that node's one `torchperf_slot` resource held while it runs. NodePool is what the tune
// sees: the nodes of one machine class, one job per node at a time, a node lost mid-job retried
// once on another, and every task stopped with the tune.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/cluster/job_runner.h"
#include "torchperf/cluster/node_job.h"
#include "torchperf/measure/clock.h"
#include "torchperf/process/watched_child.h"

namespace torchperf {

// The cluster the tune runs on: `--cluster ray` reads $RAY_ADDRESS; `--cluster ray://HOST:PORT`
// (Ray Client) or `--cluster ray:HOST:PORT` (a node's own GCS address, as `ray start` prints it)
// name it. UsageError saying how to start one when neither names an address.
std::string ray_address_of(const std::string& cluster, const std::string& ray_address_variable);

struct ClusterNode {
  std::string id;  // Ray's node id
  std::string address, hostname;
  double slots = 0;  // its torchperf_slot resources
  nlohmann::json environment;  // what the probe captured there (to_json(Environment)); null: none
  std::string machine_class;   // from that environment
  std::string unusable;        // why no job goes there (no slot, the probe failed, a path missing)
  std::string label() const;   // "hostname (address, node 1a2b3c4d)"
};

class RayCluster {
 public:
  // Starts the driver and connects; RuntimeFailure with Ray's reason when it cannot (the log
  // keeps the driver's stderr).
  RayCluster(const std::string& address, const std::string& log_path, TimeSource& time);
  ~RayCluster();  // cancels what still runs, then ends the driver
  RayCluster(const RayCluster&) = delete;
  RayCluster& operator=(const RayCluster&) = delete;

  // Every alive node, each probed with `probe` (argv) where it has a slot.
  std::vector<ClusterNode> nodes(const std::vector<std::string>& probe);
  void submit(const std::string& id, const std::string& node, const std::vector<std::string>& argv,
              const std::string& stdin_text);
  // The "done" messages that arrived within timeout_s (none: an empty list).
  std::vector<nlohmann::json> wait(double timeout_s);
  void cancel_all();
  const std::string& address() const { return address_; }

 private:
  void send(const nlohmann::json& message);
  std::optional<nlohmann::json> read_line(double timeout_s);
  nlohmann::json read_op(const std::string& op, double timeout_s);

  double seconds_since(Clock::time_point t) const { return to_seconds(time_.now() - t); }

  std::string address_, log_path_;
  TimeSource& time_;
  std::unique_ptr<WatchedChild> bridge_;
  std::string buffer_;
  std::vector<nlohmann::json> early_;  // "done" messages read while waiting for another answer
};

// What came of a job on the pool.
struct NodeJobResult {
  std::string ticket;
  std::string node;         // the node that answered (or was last lost)
  std::string node_label;
  WorkerOutcome outcome;    // kCrashed with the reason when it was lost twice
  double dispatch_s = 0;    // the wall time the cluster added: the driver's less the node's
  int attempts = 1;
  std::string lost;         // why the first node was lost, when it was retried
};

class NodePool {
 public:
  // nodes: the usable nodes of one class. executable: torchperf on the nodes.
  NodePool(RayCluster& cluster, std::vector<ClusterNode> nodes, std::string executable,
           TimeSource& time);

  std::size_t size() const { return nodes_.size(); }
  std::size_t idle() const;
  std::size_t running() const { return jobs_.size(); }
  // Starts the job on an idle node (a precondition: idle() > 0); returns its ticket.
  std::string start(const NodeJob& job);
  // The jobs that ended within timeout_s. A job whose node was lost starts again once on another
  // node of the pool (the lost node leaves it); lost twice, or with no node left, it ends as
  // kCrashed naming both losses.
  std::vector<NodeJobResult> wait(double timeout_s);
  // Starts the job and waits for it, calling tick(elapsed) between polls; tick false cancels it
  // (kStopped).
  NodeJobResult run(const NodeJob& job, const std::function<bool(double)>& tick);
  void cancel_all();
  std::string label_of(const std::string& node) const;

 private:
  struct Running {
    NodeJob job;
    std::string node, node_label;
    Clock::time_point started;
    int attempts = 1;
    std::string lost;
  };
  void launch(const std::string& ticket, Running running);
  NodeJobResult result_of(const std::string& ticket, const Running& r) const;
  std::optional<std::string> idle_node() const;

  double seconds_since(Clock::time_point t) const { return to_seconds(time_.now() - t); }

  RayCluster& cluster_;
  TimeSource& time_;
  std::vector<ClusterNode> nodes_;
  std::string executable_;
  std::map<std::string, Running> jobs_;  // ticket -> job
  std::map<std::string, std::string> busy_;  // node -> ticket
  std::vector<std::pair<std::string, Running>> retries_;  // lost once, waiting for an idle node
  std::size_t next_ticket_ = 0;
  bool cancelling_ = false;  // a lost job is not retried while every job is being cancelled
};

// What connecting to a cluster needs: its address (ray_address_of), torchperf on the nodes, the
// run's folder for the jobs' logs, and the paths every node must read (the model, the inputs).
struct RayConnection {
  std::string address;
  std::string executable;
  std::string out_dir;  // absolute: the nodes see the driver's paths (docs/cluster.md)
  std::vector<std::string> paths;
};

// A tune's jobs on a Ray cluster: connected, every node probed, and the nodes of one machine class
// kept (the class with the most nodes: timings compare only within a class; the others are left
// out, each with why). One job per node at a time.
class RayJobRunner final : public JobRunner {
 public:
  // ClusterError when no node can measure a point; RuntimeFailure when the driver cannot start.
  RayJobRunner(const RayConnection& connection, TimeSource& time, JobTick tick);
  std::size_t slots() const override { return pool_->size(); }
  std::size_t idle() const override { return pool_->idle(); }
  std::string start(const NodeJob& job) override { return pool_->start(job); }
  std::vector<JobEnd> wait(double timeout_s) override;
  void cancel_all() override { pool_->cancel_all(); }
  JobEnd run(const NodeJob& job) override;
  const JobMachines& machines() const override { return machines_; }

 private:
  std::unique_ptr<RayCluster> cluster_;
  std::unique_ptr<NodePool> pool_;
  JobMachines machines_;
};

}  // namespace torchperf
