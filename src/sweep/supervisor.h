// The supervisor of one tune run, shared by the files that hold its parts: supervisor.cpp (the
// sweep: describe, references, points, journaling and resume) and confirmation.cpp (the leaders
// head to head and the winner). Internal to sweep; tune_runner.h is the public face.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/cluster/ray_cluster.h"
#include "torchperf/measure/clock.h"
#include "torchperf/measure/environment.h"
#include "torchperf/models/aoti_package.h"
#include "torchperf/sweep/compile_costs.h"
#include "torchperf/sweep/journal.h"
#include "torchperf/sweep/search.h"
#include "torchperf/worker/paired_workers.h"
#include "torchperf/worker/shared_worker.h"
#include "torchperf/sweep/space.h"
#include "torchperf/sweep/tune_runner.h"
#include "torchperf/worker/worker_process.h"

namespace torchperf {

std::string journal_file(const std::string& out_dir);
std::string fnv1a(const std::string& text);
std::string now_iso8601();
// What a point is ranked and guarded on, from the worker's typed measure reply.
PointMetrics metrics_of(const Measurement& measurement);

class Supervisor {
 public:
  Supervisor(const TuneOptions& options, TimeSource& time, const TuneProgress& progress,
             const TuneInterrupt& interrupt)
      : o_(options), time_(time), progress_(progress), interrupt_(interrupt) {
    limits_.timeout_s = effective_point_timeout_s(options);
    limits_.memory_cap_bytes = effective_memory_cap_bytes(options);
    start_ = time_.now();
  }

  TuneResult run();

 private:
  TuneResult run_locked();  // run(), the folder's lock taken inside
  double elapsed() const { return to_seconds(time_.now() - start_); }
  // The points measured at once: a cluster's nodes, or one here. Budgets buy node-seconds.
  double nodes() const {
    return pool_ ? static_cast<double>(std::max<std::size_t>(1, pool_->size())) : 1.0;
  }
  WorkerOutcome launch(const nlohmann::json& request, const std::string& log_name, double timeout_s,
                       const WorkerEnvironment& environment = {});
  nlohmann::json ask(const nlohmann::json& request, const std::string& log_name,
                     const std::string& what);
  void prepare_references();
  void prepare_packages();
  // Compiles a package the first time a point (or a comparison) needs it; false when it failed.
  bool ensure_package(const std::string& options);
  void keep_package(const CompiledPackageRecord& record);  // in the journal and the result
  void ensure_packages_of(const Configuration& config);
  // Whether a comparison side's package is there, or compiled now when the budget pays for it;
  // `why` says otherwise.
  bool side_ready(const Configuration& config, std::string& why);
  // What measuring a point costs, its compile included (nothing when it is cached or paid).
  double point_cost_s(std::size_t index, bool brief) const;
  double compile_estimate_s(const SpacePoint& point) const;
  bool in_python(const SpacePoint& point) const;
  // The guides' starts as indices into space_.points, in the order they are measured.
  std::vector<std::size_t> expert_start_points() const;
  std::string compile_plan() const;
  void keep_winner_artifacts();
  PointResult run_point(const SpacePoint& point, double time_s, bool brief);
  // A point's first half: refused before it runs (its reference or package failed: r.status is
  // set) or its measure request, its package compiled here first.
  PointResult prepare_point(const SpacePoint& point, double time_s, bool brief,
                            nlohmann::json& request);
  // Its second half: what the worker answered, read into the point.
  void read_outcome(const SpacePoint& point, const WorkerOutcome& out, PointResult& r);
  // The point into the journal, the search and the results.
  void record_point(const Proposal& proposal, PointResult p);
  BudgetView budget_view(double out_s = 0) const;
  bool tick(double within_point);  // a worker's progress; false: interrupted
  void sweep();
  // The sweep on a cluster: one point per node of the class at a time, the search asked ahead
  // while its proposals do not wait on results out; compiles only while no point is out.
  void sweep_on_cluster();
  // Connects to the cluster, probes its nodes and keeps those of one machine class.
  void connect_cluster();
  NodeJob node_job(NodeJobKind kind, const std::string& log_name) const;
  // A point's job: a point of the python runtime is timed block by block where it runs (its
  // errors answered as a worker's); a C++ point runs in a fresh worker with its knobs' variables.
  NodeJob point_job(const SpacePoint& point, const nlohmann::json& request) const;
  bool compile_pending(const SpacePoint& point) const;
  // Here, or on a node of the cluster when the tune has one.
  WorkerOutcome run_job(const NodeJob& job, const std::function<bool(double)>& tick);
  std::string absolute(const std::string& path) const;
  std::string plan_message();
  void keep(PointResult point);
  HeadToHead compare(const std::string& a, const std::string& b, const std::string& why);
  BenchResult compare_on_node(const BenchOptions& w, const Configuration& a,
                              const Configuration& b, const WorkerRun& run);
  void confirm();
  void report(const std::string& phase, double within_point = 0);
  double point_estimate_s(bool brief = false) const;
  double startup_s() const;
  double choose_brief_time_s() const;
  std::size_t finalist_count() const;
  std::size_t origin_screen_points() const;
  double confirmation_reserve_s() const;

  TuneOptions o_;  // a copy: on a cluster its model's path is made absolute for the nodes
  TimeSource& time_;
  TuneProgress progress_;
  TuneInterrupt interrupt_;
  WorkerLimits limits_;
  Clock::time_point start_;
  std::optional<JournalLock> lock_;  // taken before the journal is read, held to the end
  std::optional<Journal> journal_;
  int session_ = 1;
  Space space_;
  WorkloadDescription desc_;
  std::map<std::string, std::string> references_;          // batch -> file
  std::map<std::string, std::string> reference_failures_;  // batch -> why
  std::map<std::string, std::string> package_of_point_;    // key -> its package's options
  std::map<std::string, std::string> package_failures_;    // package options -> why
  std::map<std::string, AotiOptions> packages_;            // options -> what the space needs
  std::set<std::string> packages_ready_;                   // compiled, or found in the cache
  std::string program_;                                    // the program packages compile
  CompileCosts costs_;
  double last_compile_s_ = 0;  // what the last point's own compile took (torch.compile)
  std::map<std::string, PointResult> finished_;
  std::map<std::string, HeadToHead> compared_;
  std::map<std::string, const SpacePoint*> by_key_;
  TuneResult result_;
  std::size_t planned_ = 0, done_ = 0, failed_ = 0;
  std::vector<double> brief_walls_, full_walls_;  // this session's points, compiles left out
  std::vector<double> python_brief_walls_, python_full_walls_;  // those of the Python worker
  std::vector<double> fresh_brief_walls_;         // brief points that started their worker
  std::vector<double> startup_walls_;             // describe and reference jobs
  std::unique_ptr<Search> search_;
  std::unique_ptr<SharedWorker> shared_;         // brief points' worker
  std::map<std::string, std::size_t> index_of_;  // key -> index into space_.points
  double brief_time_s_ = 0;
  std::string current_;
  std::string phase_ = "preparing";
  bool interrupted_ = false;
  // The machine class every point of this session is measured on (this machine's, or the
  // cluster's chosen nodes'), and its environment.
  std::string machine_class_;
  Environment class_environment_;
  std::unique_ptr<RayCluster> cluster_;
  std::unique_ptr<NodePool> pool_;
  nlohmann::json cluster_record_;  // the session record's "cluster"
  std::string cluster_plan_;       // what the plan says of the cluster
  std::string last_node_;          // the node of the last job run on the cluster
};

}  // namespace torchperf
