// The supervisor of one tune run, shared by the files that hold its parts: supervisor.cpp (the
// sweep: describe, references, points, journaling and resume) and confirmation.cpp (the leaders
// head to head and the winner). Internal to sweep; tune_runner.h is the public face.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/measure/clock.h"
#include "torchperf/models/aoti_package.h"
#include "torchperf/sweep/compile_costs.h"
#include "torchperf/sweep/journal.h"
#include "torchperf/sweep/search.h"
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
  WorkerOutcome launch(const nlohmann::json& request, const std::string& log_name, double timeout_s,
                       const WorkerEnvironment& environment = {});
  // A point of the python runtime, timed here block by block in the Python worker; its errors
  // are answered as a worker's (a failed point with its kind).
  WorkerOutcome measure_python(const BenchOptions& workload, const std::string& log_name);
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
  bool tick(double within_point);  // a worker's progress; false: interrupted
  void sweep();
  std::string plan_message();
  void keep(PointResult point);
  HeadToHead compare(const std::string& a, const std::string& b, const std::string& why);
  void confirm();
  void report(const std::string& phase, double within_point = 0);
  double point_estimate_s(bool brief = false) const;
  double startup_s() const;
  double choose_brief_time_s() const;
  std::size_t finalist_count() const;
  std::size_t origin_screen_points() const;
  double confirmation_reserve_s() const;

  const TuneOptions& o_;
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
};

}  // namespace torchperf
