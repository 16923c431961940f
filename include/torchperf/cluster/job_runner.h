// Where a tune's jobs run, behind one interface, so that the supervisor has one sweep loop: on
// this machine, one job at a time (LocalJobRunner), or on a Ray cluster's nodes, one per node
// (RayJobRunner, ray_cluster.h). A runner also says which machine class its jobs are measured on,
// and is handed what it needs (a clock, the worker's limits, a tick), never the supervisor.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/cluster/node_job.h"
#include "torchperf/measure/clock.h"
#include "torchperf/measure/environment.h"
#include "torchperf/measure/machine_load.h"
#include "torchperf/worker/shared_worker.h"

namespace torchperf {

// What came of a job.
struct JobEnd {
  std::string ticket;
  WorkerOutcome outcome;
  std::string node_label;      // the node that ran it ("" on this machine)
  double dispatch_s = 0;       // the wall time a cluster added: the driver's less the node's
  std::string lost;            // why its first node was lost, when it ran again on another
  bool shared_worker = false;  // a brief point measured in a worker shared with points before it
  bool fresh_worker = true;    // it started its worker (its wall holds a start-up)
};

// Called between polls with the seconds a job has run: false stops it (Ctrl-C); the job then
// ends as JobEnding::kStopped.
using JobTick = std::function<bool(double elapsed_s)>;

// The machine class every job of a runner is measured on, and what the tune's plan and session
// record say of where they run.
struct JobMachines {
  std::string machine_class;
  Environment environment;
  nlohmann::json record;           // the session record's "cluster" (null on this machine)
  std::string plan;                // "" on this machine
  std::vector<std::string> notes;  // nodes left out, and why
};

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // Jobs that may run at once (0: a cluster lost every node of its class).
  virtual std::size_t slots() const = 0;
  virtual std::size_t idle() const = 0;
  // Starts a job on an idle slot (a precondition: idle() > 0); its ticket.
  virtual std::string start(const NodeJob& job) = 0;
  // The jobs that ended within timeout_s. Here, the one started job is run to its end.
  virtual std::vector<JobEnd> wait(double timeout_s) = 0;
  // Stops every job still out; what they measured is lost.
  virtual void cancel_all() = 0;
  // Lets go of what idles between jobs and may disturb other work timed here (a shared C++
  // worker, which omp_wait=active makes spin; idle Python workers wait on their pipes and stay).
  virtual void release() {}
  // Workers the brief points shared, started so far.
  virtual std::size_t shared_workers_started() const { return 0; }
  virtual const JobMachines& machines() const = 0;
  // Other work on the machine the jobs run on, sampled from the runner's start and after each
  // job; null where the runner cannot read it (a cluster's nodes are not this machine).
  virtual MachineLoad* machine_load() { return nullptr; }
  // One job to its end: started, then waited for, the tick between polls.
  virtual JobEnd run(const NodeJob& job);

 protected:
  explicit JobRunner(JobTick tick) : tick_(std::move(tick)) {}
  JobTick tick_;
};

// This machine: one job at a time, each in a fresh worker, but brief points (NodeJob::shared)
// share a warm worker while their process state is the same (SharedWorker).
class LocalJobRunner final : public JobRunner {
 public:
  LocalJobRunner(TimeSource& time, std::string executable, std::string log_dir,
                 WatchLimits limits, JobTick tick);
  std::size_t slots() const override { return 1; }
  std::size_t idle() const override { return pending_ ? 0 : 1; }
  std::string start(const NodeJob& job) override;
  std::vector<JobEnd> wait(double timeout_s) override;
  void cancel_all() override { pending_.reset(); }
  void release() override;
  std::size_t shared_workers_started() const override;
  const JobMachines& machines() const override { return machines_; }
  MachineLoad* machine_load() override { return &load_; }

 private:
  TimeSource& time_;
  std::string executable_, log_dir_;
  WatchLimits limits_;
  JobMachines machines_;
  std::optional<NodeJob> pending_;
  std::string pending_ticket_;
  std::size_t next_ticket_ = 0;
  std::unique_ptr<SharedWorker> shared_;  // the brief points' worker
  PythonWorkerPool python_pool_;           // the Python points' and comparison sides' workers
  std::size_t python_started_ = 0;
  MachineLoad load_;
};

}  // namespace torchperf
