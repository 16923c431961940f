// The supervisor of one tune run tells its story: the journal opened, the model described, the
// references computed, the plan, one sweep loop, the confirmation, the summary. The rest is
// delegated to three seams, each handed what it needs: where jobs run (JobRunner), what a point
// costs (TuneBudget), what a runtime must prepare (Artefacts). Internal to sweep: supervisor.cpp
// (the sweep) and confirmation.cpp (the leaders head to head and the winner); tune_runner.h is
// the public face.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/cluster/job_runner.h"
#include "torchperf/measure/clock.h"
#include "torchperf/measure/machine_load.h"
#include "torchperf/sweep/artefacts.h"
#include "torchperf/sweep/journal.h"
#include "torchperf/sweep/search.h"
#include "torchperf/sweep/space.h"
#include "torchperf/sweep/tune_budget.h"
#include "torchperf/sweep/tune_runner.h"

namespace torchperf {

std::string journal_file(const std::string& out_dir);
std::string fnv1a(const std::string& text);
std::string now_iso8601();
// What a point is ranked and guarded on, from the worker's typed measure reply.
PointMetrics metrics_of(const Measurement& measurement);

class Supervisor {
 public:
  Supervisor(const TuneOptions& options, TimeSource& time, const TuneProgress& progress,
             const TuneInterrupt& interrupt);
  TuneResult run();

 private:
  // The story, in order.
  TuneResult run_locked();  // run(), the folder's lock taken inside
  void open_journal();
  void open_runner();
  void describe();
  void record_session();
  void read_back();  // what earlier sessions finished
  void prepare_references();
  void sweep();
  void confirm();
  void keep_winner_artifacts();
  void summarize();

  // Jobs.
  NodeJob job(NodeJobKind kind, const std::string& log_name) const;
  // A point's job: the Python runtime's timed block by block where it runs; a C++ point in a
  // worker started with its worker knobs' environment (a brief one may share a warm worker).
  NodeJob point_job(const SpacePoint& point, const nlohmann::json& request, bool brief) const;
  // A job whose failure is the run's failure (describe).
  nlohmann::json ask(const nlohmann::json& request, const std::string& log_name,
                     const std::string& what);
  bool tick(double within_point);  // a job's progress; false: interrupted
  bool stop_requested();
  void report(const std::string& phase, double within_point = 0);

  // Points.
  struct Out {  // a point out on the runner
    Proposal proposal;
    PointResult point;
    double cost_s = 0;
  };
  // Starts points while the runner has an idle slot and the search can propose without waiting
  // on the results out; false once the search has nothing more to propose.
  bool start_points(std::map<std::string, Out>& out, std::optional<Proposal>& held);
  void finish_point(std::map<std::string, Out>& out, JobEnd& end);
  // A point's first half: refused before it runs (its reference or package failed: r.status is
  // set) or its measure request, its package compiled here first.
  PointResult prepare_point(const Proposal& proposal, nlohmann::json& request);
  // Its second half: what the worker answered, read into the point.
  void read_outcome(std::size_t index, const WorkerOutcome& out, PointResult& r);
  void record_point(const Proposal& proposal, PointResult p);
  void keep(std::size_t index, PointResult point);
  // The guides' starts as indices into space_.points, in the order they are measured.
  std::vector<std::size_t> expert_start_points() const;
  std::string starts_text() const;
  void note_budget_after_sweep(double sweep_start_s);
  // A budget not spent is said in one line, with why the sweep stopped (issue 60).
  void note_unspent_budget(double confirm_start_s);
  void note_machine_load();
  void note_calibration();
  void notes_after_confirmation(double confirm_start_s);
  bool pair_fits() const;
  // Whether the winner is measured against the baseline, and the budget holds back its pair.
  bool baseline_reserved() const;
  std::string busy_text(const MachineLoad& load, bool before_sweep) const;
  // On a busy machine, the points whose threads exceed the cores left free: not crowned.
  std::vector<const PointResult*> crownable(std::vector<const PointResult*> ok);

  // Confirmation.
  HeadToHead compare(const std::string& a, const std::string& b, const std::string& why);
  // One run of the pair, journaled; load: other work in its rounds' windows, where it was read.
  HeadToHead run_pair(const Configuration& ca, const Configuration& cb, HeadToHead h,
                      const std::string& id, const std::string& why,
                      std::optional<RoundLoad>& load);
  std::vector<std::string> choose_leaders(const std::vector<const PointResult*>& ok) const;
  void compare_winner(const std::string& winner);
  void single_changes();

  std::size_t finalist_count() const { return std::max<std::size_t>(o_.leaders + 1, 4); }
  // The origin and its one-knob changes: the smart search's first screen. Its second, around the
  // expert start, is about as large.
  std::size_t origin_screen_points() const;

  TuneOptions o_;
  TimeSource& time_;
  TuneProgress progress_;
  TuneInterrupt interrupt_;
  WatchLimits limits_;
  TuneBudget budget_;
  std::optional<JournalLock> lock_;  // taken before the journal is read, held to the end
  std::optional<Journal> journal_;
  nlohmann::json header_;
  int session_ = 1;
  std::unique_ptr<JobRunner> runner_;
  Space space_;
  WorkloadDescription desc_;
  nlohmann::json described_;                                // the describe job's description
  std::unique_ptr<Artefacts> artefacts_;
  std::map<std::string, std::string> references_;          // batch -> file
  std::map<std::string, std::string> reference_failures_;  // batch -> why
  std::map<std::string, PointResult> finished_;
  std::map<std::string, HeadToHead> compared_;
  std::map<std::string, std::size_t> index_of_;  // key -> index into space_.points
  TuneResult result_;
  std::size_t planned_ = 0, done_ = 0, failed_ = 0;
  std::unique_ptr<Search> search_;
  std::string current_;
  std::string phase_ = "preparing";
  bool interrupted_ = false;
};

}  // namespace torchperf
