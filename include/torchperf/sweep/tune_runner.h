// The supervisor of a sweep: describes the workload and computes the references in workers, runs
// every point of the space in its own worker in an informative-then-random order within the
// budget, journals each as it finishes, then re-measures the leaders head to head and names a
// winner only when its lead is significant.
#pragma once

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/bench/bench_runner.h"
#include "torchperf/measure/clock.h"
#include "torchperf/measure/ratio_estimate.h"
#include "torchperf/sweep/objective.h"
#include "torchperf/error.h"
#include "torchperf/process/watched_child.h"
#include "torchperf/sweep/search.h"
#include "torchperf/sweep/tune_options.h"

namespace torchperf {

// ok: measured and within the accuracy guard; guarded: measured, outside the guard; failed: no
// measurement (the worker crashed, hung, ran out of memory, or answered an error).
enum class PointStatus { kOk, kGuarded, kFailed };
std::string to_string(PointStatus status);
// Throws std::invalid_argument for another name.
PointStatus point_status_from_string(const std::string& name);

// Why a point failed, each source with its own vocabulary, never one string of three: it was
// refused before it ran (its batch's reference, or its AOTInductor package, failed), its worker
// ended without an answer (how: Ending), or it answered an error (its kind: ErrorKind).
enum class FailureSource { kNone, kReference, kPackage, kEnded, kAnswered };
struct PointFailure {
  FailureSource source = FailureSource::kNone;
  Ending ending = Ending::kCrashed;       // kEnded
  ErrorKind error = ErrorKind::kRuntime;  // kAnswered
  static PointFailure ended(Ending ending);
  static PointFailure answered(const std::string& kind);  // a kind not in the table: runtime
  // The journal's failure_kind: "reference", "package", how it ended ("crashed", "timed-out",
  // "out-of-memory"), or the error kind's name; "" for none.
  std::string name() const;
  static PointFailure named(const std::string& name);
  bool operator==(const PointFailure& o) const { return name() == o.name(); }
};

struct PointResult {
  std::string key;
  PointStatus status = PointStatus::kFailed;
  std::string reason;  // why guarded or failed
  PointFailure failure;
  double own_compile_s = 0;  // the compile its own worker paid (torch.compile), in its wall
  int changes = 0;
  PointMetrics metrics;
  double score = 0;  // higher is better
  double wall_s = 0;
  double overhead_s = 0;  // wall time not spent warming up or measuring
  bool resumed = false;   // read from the journal, not run in this session
  // How the search measured it: brief points rank candidates, full ones (brief false) decide.
  SearchStage stage = SearchStage::kSweep;
  bool brief = false;
  double time_s = 0;           // its measurement budget
  bool shared_worker = false;  // measured in a worker shared by brief points of one process state
  // Where it was measured: the machine class (always), and on a cluster the node, the wall time
  // the cluster added, and why its first node was lost when it was measured again on another.
  std::string machine_class;
  std::string node;
  double dispatch_s = 0;
  std::string node_lost;
  // The worker's full measurement (bench's JSON) when it answered; once journalled, and read
  // back, only its "compile" part (compile_part) stays in memory.
  nlohmann::json measurement;
};

// An interleaved A-vs-B re-measurement, each side in its own worker; ratio > 1 means A is
// better on the objective, [low, high] its confidence interval (measure/ratio_estimate.h).
struct HeadToHead {
  std::string a, b;
  double ratio = 0, low = 0, high = 0;
  std::size_t rounds = 0;
  Verdict verdict = Verdict::kUndetermined;  // what the interval says of A
  std::string failure;                       // non-empty when the comparison itself failed
};

// A one-knob change from the baseline, from the sweep (the two points were not paired): the
// ratio of their scores, and a bound (not a confidence interval): the ratio of the points' own
// interval ends, the widest the ratio could be if each point's interval held.
struct SingleChange {
  std::string knob, value, key;
  double ratio = 0, low = 0, high = 0;
};

// A torch.export program's AOTInductor package, compiled (or found in the cache) before the sweep.
struct CompiledPackageRecord {
  std::string options;    // "precision=fp32,max_autotune=0,device=cpu"
  std::string path;       // "" when it failed
  double compile_s = 0;   // what compiling it cost (when it was compiled)
  bool cache_hit = false; // this run paid nothing for it
  std::string failure;    // why its points did not run ("" when it compiled)
};

// What a tune said it would do before its first point (tune_plan.h): the plan line, and whether
// the budget fits the space.
struct TunePlan {
  std::string summary;
  std::size_t points = 0;         // planned
  double estimated_s = 0;         // the points still to run, and the confirmation
  bool budget_too_small = false;  // the budget cannot pay for what the search would do
  std::size_t fits = 0;           // with budget_too_small: the points it pays for
  std::string budget_note;        // why, and what it fits instead
};

// Other work on the machine while a local tune ran (measure/machine_load.h): cores it kept busy
// before the sweep and during it, and whether that made the run a busy one.
struct MachineLoadRecord {
  bool sampled = false;           // false on a cluster, or where /proc cannot be read
  double before_cores = NAN;      // NaN: the interval before the sweep was too short to read
  double during_median_cores = 0, during_max_cores = 0;
  bool busy = false;
  int usable_cores = 0, free_cores = 0;
  std::size_t set_aside = 0;      // points not crowned: their threads exceed the free cores
};

struct TuneResult {
  std::string journal_path;
  WorkloadDescription workload;
  Objective objective;
  AccuracyGuard guard;
  std::size_t space_points = 0, space_combinations = 0;
  std::vector<std::string> space_dropped;
  std::string origin;               // where one-knob changes are counted from (resolved)
  std::vector<std::string> axes;    // "knob=v1,v2"
  std::vector<PointResult> points;  // every finished point, journal order (a point measured
                                    // briefly, then in full, once: in full)
  SearchKind search = SearchKind::kExhaustive;
  std::string search_spent;  // points proposed by stage, e.g. "screen 13, explore 8, final 4"
  double brief_time_s = 0;   // the brief measurement budget (smart)
  std::size_t brief_points = 0, full_points = 0;  // measurements this session, by length
  std::size_t brief_workers = 0;  // the worker processes the brief points shared, this session
  std::size_t not_run = 0;        // left out by the budget
  bool budget_exhausted = false;
  TunePlan plan;
  double wall_s = 0;            // this session
  double overhead_median_s = 0;
  std::size_t resumed_points = 0, truncated_lines = 0;

  std::vector<std::string> leaders;
  std::vector<HeadToHead> confirmation;
  std::optional<std::string> winner;
  bool tie = false;
  std::vector<std::string> tied;
  std::string winner_note;
  std::optional<HeadToHead> vs_baseline, vs_careful;
  std::string careful, baseline;  // both resolved at the winner's batch
  std::optional<HeadToHead> vs_as_given;  // with TuneOptions::as_given
  std::string as_given;                   // that configuration, resolved at the winner's batch
  std::vector<SingleChange> single_changes;
  std::vector<std::string> notes;
  MachineLoadRecord machine_load;
  std::vector<CompiledPackageRecord> packages;  // this session's, in compile order
};

struct TuneStatus {
  std::string phase;    // "preparing", "plan", "sweeping", "confirming"
  std::string message;  // phase "plan": what will run and why, for the user before it starts
  std::size_t done = 0, failed = 0, planned = 0;
  double fraction = 0, eta_s = 0;
  std::string best;  // the best point so far with its value
  std::string current;
};

using TuneProgress = std::function<void(const TuneStatus&)>;
// Polled while a worker runs; true stops the sweep (the journal keeps every finished point).
using TuneInterrupt = std::function<bool()>;

// Throws UsageError/ConfigError for a bad space or journal, ModelError/WorkloadError when the
// workload itself is unusable, Interrupted when interrupt() fired.
TuneResult run_tune(const TuneOptions& options, TimeSource& time,
                    const TuneProgress& progress = nullptr,
                    const TuneInterrupt& interrupt = nullptr);

// Names the winner from the leaders (best first, as keys) and the leader's head-to-head
// comparisons with the others (b = the runner-up's key): the leader when it beats them all
// significantly; a runner-up that beat it (the largest margin); or, when some are
// indistinguishable, the simplest of the tied: fewest changes, then the smaller batch (the same
// throughput at less latency and memory), then the highest cosine, then the sweep's order.
struct WinnerDecision {
  std::string winner;  // empty when there are no leaders
  bool tie = false;
  std::vector<std::string> tied;
  std::string note;
};
WinnerDecision decide_winner(const std::vector<std::string>& leaders,
                             const std::vector<HeadToHead>& confirmation,
                             const std::function<int(const std::string&)>& changes,
                             const std::function<double(const std::string&)>& cosine,
                             const std::function<long long(const std::string&)>& batch = nullptr);

// What a head-to-head whose rounds saw other work come and go (RoundLoad::varied) is followed by:
// measured again (once, where the budget fits another pair), or kept with a note that says why.
struct LoadedPair {
  bool again = false;
  std::string note;  // "" when its load did not vary
};
LoadedPair after_varied_load(const std::optional<RoundLoad>& load, const std::string& why,
                             int attempt, bool another_fits);

// The header a journal starts with for these options (what --resume checks).
nlohmann::json journal_header(const TuneOptions& options);
// The experiment options a journal was written for (for --resume with no other flags).
nlohmann::json journal_experiment(const std::string& out_dir);

nlohmann::json to_json(const TuneResult& result);

// The journal's forms of a point, its metrics and a comparison (docs/results-schema.md); the
// readers throw nlohmann::json's exceptions on a record of another shape.
nlohmann::json to_json(const PointMetrics& metrics);
PointMetrics point_metrics_from_journal(const nlohmann::json& j);
nlohmann::json to_json(const PointResult& point);
PointResult point_from_journal(const nlohmann::json& record);
// {"compile": …} of a measurement (what the point compiled, its graph breaks), or null.
nlohmann::json compile_part(const nlohmann::json& measurement);
nlohmann::json to_json(const HeadToHead& comparison);
HeadToHead head_to_head_from_journal(const nlohmann::json& record);

// Reads every record a resumed tune reads (sessions, points, comparisons) as it will read them:
// ResultsError naming the journal, the line and the field of the first that does not read
// (records[0] is the header, line 1).
void check_journal_records(const std::vector<nlohmann::json>& records, const std::string& path);

}  // namespace torchperf
