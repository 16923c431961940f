#include "supervisor.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "torchperf/bench/measurement_json.h"
#include "torchperf/cluster/machine_class.h"
#include "torchperf/cluster/ray_cluster.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/json_fields.h"
#include "torchperf/sweep/tune_plan.h"
#include "torchperf/text.h"
#include "torchperf/worker/protocol.h"
#include "torchperf/worker/python_worker.h"
#include "torchperf/worker/worker.h"

namespace torchperf {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string absolute(const std::string& path) {
  return fs::absolute(path).lexically_normal().string();
}

BudgetSettings budget_settings(const TuneOptions& o) {
  BudgetSettings b;
  b.budget_s = o.budget_s;
  b.full_time_s = o.workload.time_s;
  b.leaders = o.leaders;
  b.as_given = !o.as_given.empty();
  return b;
}

}  // namespace

Supervisor::Supervisor(const TuneOptions& options, TimeSource& time, const TuneProgress& progress,
                       const TuneInterrupt& interrupt)
    : o_(options),
      time_(time),
      progress_(progress),
      interrupt_(interrupt),
      budget_(time, budget_settings(options)) {
  limits_.time_limit_s = effective_point_timeout_s(options);
  limits_.memory_cap_bytes = effective_memory_cap_bytes(options);
  // A stream's bucket edges are designed for the batch swept (its first value, when several):
  // every job of the tune must design the same edges, so the padding values agree.
  if (const auto batch = o_.space.find("batch"); batch != o_.space.end() && !batch->second.empty())
    if (const auto n = positive_whole_number(batch->second.front())) o_.workload.stream_batch = *n;
}

// ---- Jobs

// A job's log goes to OUT/workers on whichever machine runs it: the nodes see the driver's paths
// (docs/cluster.md), so every path a job names is absolute.
NodeJob Supervisor::job(NodeJobKind kind, const std::string& log_name) const {
  NodeJob job;
  job.kind = kind;
  job.executable = o_.worker_executable;
  job.log_dir = absolute(o_.out_dir + "/workers");
  job.log_name = log_name;
  job.limits = limits_;
  return job;
}

// A brief point may share a worker with the points before it of its process state; a full C++
// point has a fresh one. A Python point, brief or full, takes one of its state from the pool: a
// fresh one cost a finalist its compile again (30-40 s on bench 23's encoder).
NodeJob Supervisor::point_job(const SpacePoint& point, const json& request, bool brief) const {
  const std::string log_name = fmt::format("point-{}", fnv1a(point.key).substr(0, 10));
  if (worker_of(point.config) == RuntimeWorker::kPython) {
    NodeJob python = job(NodeJobKind::kPython, log_name);
    python.workload = from_request<MeasureRequest>(request).workload;
    python.configuration = point.config.to_string();
    python.shared = true;  // its Python worker kept for the next point of its state
    return python;
  }
  NodeJob cpp = job(NodeJobKind::kWorker, log_name);
  cpp.request = request;
  cpp.environment = worker_environment(point.config);
  cpp.configuration = point.config.to_string();
  cpp.shared = brief;
  return cpp;
}

bool Supervisor::stop_requested() {
  if (interrupt_ && interrupt_()) interrupted_ = true;
  return interrupted_;
}

bool Supervisor::tick(double within_point) {
  report(phase_, within_point);
  return !stop_requested();
}

json Supervisor::ask(const json& request, const std::string& log_name, const std::string& what) {
  NodeJob one = job(NodeJobKind::kWorker, log_name);
  one.request = request;
  const WorkerOutcome out = runner_->run(one).outcome;
  budget_.add_startup(out.wall_s);  // a worker's start-up and one model load, measured
  if (interrupted_) throw Interrupted("interrupted while " + what);
  if (out.ending != Ending::kAnswered)
    throw RuntimeFailure(what + ": the worker " + out.message + " (log: " + o_.out_dir +
                         "/workers/" + log_name + ".log)");
  if (!out.response.value("ok", false)) rethrow_worker_error(out.response.at("error"), what);
  return out.response;
}

void Supervisor::report(const std::string& phase, double within_point) {
  if (!progress_) return;
  TuneStatus s;
  s.phase = phase;
  s.done = done_;
  s.failed = failed_;
  s.planned = planned_;
  // Most of a smart search's points are brief; its few full ones are in the reserve's slack.
  const bool brief = o_.search == SearchKind::kSmart;
  const double progress_points = static_cast<double>(done_) +
                                 std::min(0.95, within_point / budget_.point_estimate_s(brief));
  s.fraction = planned_ ? progress_points / static_cast<double>(planned_) : 0;
  s.eta_s = budget_.eta_s(static_cast<double>(planned_) - progress_points, brief);
  // Once crowned, the best is the winner's figure (issue 84's probe: the bar's last "best" was a
  // brief point's, not the winner's); before, full measurements rank above brief ones, as the
  // confirmation ranks them.
  const PointResult* best = nullptr;
  for (const auto& [key, p] : finished_) {
    if (p.status != PointStatus::kOk) continue;
    if (result_.winner) {
      if (key == *result_.winner) best = &p;
      continue;
    }
    if (!best || (best->brief != p.brief ? best->brief : p.score > best->score)) best = &p;
  }
  if (best)
    s.best =
        fmt::format("{:.4g} {}", objective_value(o_.objective, best->metrics), o_.objective.unit());
  s.current = current_;
  progress_(s);
}

// ---- The story

TuneResult Supervisor::run() {
  // A folder this run made is removed again when the run fails before its journal exists: a
  // refused model leaves no empty run folder behind.
  std::error_code ec;
  const bool made_folder = !fs::exists(o_.out_dir, ec);
  try {
    return run_locked();
  } catch (const Interrupted& e) {
    // Wherever the stop landed (references, sweep, confirmation), the way on is the same.
    const std::string message = e.what();
    if (message.find("--resume") != std::string::npos || !journal_) throw;
    throw Interrupted(message + "; every finished point is in the journal '" + journal_->path() +
                      "': continue with --resume " + o_.out_dir);
  } catch (...) {
    if (made_folder && !journal_) {
      lock_.reset();
      fs::remove_all(o_.out_dir, ec);
    }
    throw;
  }
}

TuneResult Supervisor::run_locked() {
  validate(o_);
  if (o_.worker_executable.empty()) throw UsageError("tune: no worker executable given");
  open_journal();
  open_runner();
  describe();
  record_session();
  read_back();
  prepare_references();
  artefacts_->plan();
  sweep();
  if (interrupted_)
    throw Interrupted(fmt::format(
        "interrupted: {} point(s) of {} are in the journal '{}'; continue with --resume {}",
        finished_.size(), space_.points.size(), journal_file(o_.out_dir), o_.out_dir));
  current_.clear();
  phase_ = "confirming";
  report(phase_);
  const double confirm_start = budget_.elapsed_s();
  confirm();
  notes_after_confirmation(confirm_start);
  keep_winner_artifacts();
  summarize();
  if (result_.winner) report("crowned");
  return result_;
}

void Supervisor::open_journal() {
  const std::string path = journal_file(o_.out_dir);
  result_.journal_path = path;
  result_.objective = o_.objective;
  result_.guard = o_.guard;
  header_ = journal_header(o_);
  if (o_.resume && !fs::exists(path))
    throw ResultsError("--resume '" + o_.out_dir + "': no journal there (expected results.jsonl "
                       "from an earlier tune)");
  lock_.emplace(JournalLock::acquire(o_.out_dir));  // one writer per journal
  if (!o_.resume) {
    Journal::refuse_existing(path);  // before the model is loaded
    return;
  }
  // Refused before the file is touched (a cut-short line is trimmed only in our own journal).
  journal_.emplace(Journal::reopen(path, [&](const json& their_header) {
    json theirs = their_header.at("experiment");
    // Journals from before the smart search swept the whole cube.
    if (!theirs.contains("search")) theirs["search"] = to_string(SearchKind::kExhaustive);
    const json& ours = header_.at("experiment");
    if (theirs == ours) return;
    std::string diff;
    for (const auto& [k, v] : ours.items())
      if (!theirs.contains(k) || theirs.at(k) != v)
        diff += (diff.empty() ? "" : "; ") + k + " " +
                (theirs.contains(k) ? theirs.at(k).dump() : "absent") + " there, " + v.dump() +
                " here";
    throw UsageError("--resume: the journal '" + path + "' is from another experiment (" + diff +
                     "): refusing to mix results; use another --out");
  }));
  result_.truncated_lines = journal_->truncated_lines();
  check_journal_records(journal_->records(), path);  // a damaged point is said, not dropped
  for (const auto& r : journal_->records())
    if (r.value("record", "") == "session") session_ = std::max(session_, r.value("session", 0) + 1);
}

// Here, or on the Ray cluster the options name (its address resolved by the CLI): the runner
// probes its nodes and keeps those of one machine class.
void Supervisor::open_runner() {
  const JobTick tick = [this](double t) { return this->tick(t); };
  if (o_.cluster.empty()) {
    runner_ = std::make_unique<LocalJobRunner>(time_, o_.worker_executable,
                                               absolute(o_.out_dir + "/workers"), limits_, tick);
    return;
  }
  // Each job names the driver's paths, which every node sees (docs/cluster.md): absolute ones.
  RayConnection c;
  c.address = o_.cluster;
  c.executable = o_.worker_executable;
  c.out_dir = absolute(o_.out_dir);
  std::error_code ec;
  if (fs::is_regular_file(o_.workload.model, ec)) {
    o_.workload.model = absolute(o_.workload.model);
    c.paths.push_back(o_.workload.model);
  }
  for (std::string* file : {&o_.workload.inputs_file, &o_.workload.calibration_file})
    if (!file->empty()) c.paths.push_back(*file = absolute(*file));
  if (!o_.workload.python_module.empty() &&
      o_.workload.python_module != BenchOptions::kProgramStandsIn) {
    o_.workload.python_module = absolute(o_.workload.python_module);
    c.paths.push_back(o_.workload.python_module);
  }
  fs::create_directories(o_.out_dir + "/workers");
  current_ = "connecting to the Ray cluster at " + c.address;
  report("preparing");
  runner_ = std::make_unique<RayJobRunner>(c, time_, tick);
  // Budgets buy node-seconds: as many as there are nodes, read anew as nodes are lost.
  budget_.set_slots([runner = runner_.get()] { return runner->slots(); });
  for (const auto& note : runner_->machines().notes) result_.notes.push_back(note);
}

void Supervisor::describe() {
  report("preparing");
  const json reply = ask(to_request(DescribeRequest{o_.workload}), "describe",
                         "loading model '" + o_.workload.model + "'");
  desc_ = from_reply<DescribeReply>(reply, "describe").description;
  described_ = reply.at("description");
  result_.workload = desc_;
  // Latency is judged per call at batch 1 unless the user names the batch sizes.
  auto requested = o_.space;
  if (!o_.objective.higher_is_better() && !requested.count("batch") &&
      !desc_.traits.inputs_from_file) {
    requested["batch"] = {"1"};
    result_.notes.push_back("objective " + o_.objective.to_string() +
                            ": batch pinned to 1 (name batch sizes with --batch to sweep them)");
  }
  // A tune left to choose its space on a CPU also tries glibc's allocator tuned (issue 60): a
  // heap that faults its pages in again every call, as the points' advice says, moved a CNN
  // 1.19-1.33x. A space given with --space sweeps it only when it names it.
  if (!desc_.traits.cuda && std::all_of(requested.begin(), requested.end(),
                                        [](const auto& knob) { return knob.first == "batch"; }))
    requested["allocator"] = {"glibc", "glibc-tuned"};
  space_ = build_space(desc_.traits, requested);
  if (!o_.as_given.empty()) {
    try {
      resolve(Configuration::parse(o_.as_given), desc_.traits);
    } catch (const std::exception& e) {
      throw UsageError("--as-given '" + o_.as_given + "': " + e.what());
    }
  }
  for (std::size_t i = 0; i < space_.points.size(); ++i) index_of_[space_.points[i].key] = i;
  // Without a batch: a static-batch workload refuses any batch but its own.
  budget_.set_distinct_baseline(baseline_reserved());
  budget_.set_space_points(space_.points.size());
  result_.space_points = space_.points.size();
  result_.space_combinations = space_.combinations;
  result_.space_dropped = space_.dropped;
  for (const auto& l : space_.left_out) result_.notes.push_back("left out of the space: " + l);
  try {
    result_.origin = resolve(space_.origin, desc_.traits).to_string();
  } catch (const ConfigError&) {
    result_.origin = space_.origin.to_string();
  }
  for (const auto& a : space_.axes) {
    std::string s = a.knob + "=";
    for (std::size_t i = 0; i < a.values.size(); ++i) s += (i ? "," : "") + a.values[i];
    result_.axes.push_back(s);
  }
  ArtefactEvents events;
  events.compiling = [this](const std::string& what) {
    current_ = what;
    report("compiling");
  };
  events.kept = [this](const CompiledPackageRecord& record) {
    journal_->append({{"record", "package"},
                      {"session", session_},
                      {"options", record.options},
                      {"path", record.path},
                      {"compile_s", record.compile_s},
                      {"cache_hit", record.cache_hit},
                      {"failure", record.failure}});
    result_.packages.push_back(record);
  };
  events.keep_going = [this] { return !stop_requested(); };
  artefacts_ = std::make_unique<Artefacts>(space_, desc_.traits, o_.workload,
                                           limits_.memory_cap_bytes, std::move(events));
  budget_.set_prices(artefacts_.get());
}

void Supervisor::record_session() {
  if (!journal_) journal_.emplace(Journal::create(journal_file(o_.out_dir), header_));
  const JobMachines& machines = runner_->machines();
  journal_->append({{"record", "session"},
                    {"session", session_},
                    {"started", now_iso8601()},
                    {"environment", to_json(machines.environment)},
                    {"machine_class", machines.machine_class},
                    {"cluster", machines.record},
                    {"workload", described_},
                    {"space",
                     {{"axes", result_.axes},
                      {"points", space_.points.size()},
                      {"combinations", space_.combinations},
                      {"dropped", space_.dropped},
                      {"left_out", space_.left_out}}},
                    {"limits",
                     {{"budget_s", o_.budget_s},
                      {"point_timeout_s", limits_.time_limit_s},
                      {"memory_cap_bytes", limits_.memory_cap_bytes}}}});
}

// What earlier sessions finished is kept and not run again: a point once, or briefly and then in
// full (the full measurement replaces the brief one).
void Supervisor::read_back() {
  SearchOptions search(o_.order_seed);
  search.finalists = finalist_count();
  search.first = expert_start_points();
  if (budget_.limited()) {
    // A budget is there to be used: exploration goes on, in the model's order, until only the
    // (reachable) finals and the confirmation are left, or every point is measured.
    search.patience = std::numeric_limits<std::size_t>::max();
    search.tolerance = std::numeric_limits<double>::infinity();
    search.finals_in_reach = true;
  }
  search_ = make_search(o_.search, space_, search);
  const std::string& machine_class = runner_->machines().machine_class;
  std::set<std::string> other_class;
  std::string other_difference;
  for (const auto& r : journal_->records()) {
    const std::string kind = r.value("record", "");
    if (kind == "head_to_head") {
      compared_[r.at("id").get<std::string>()] = head_to_head_from_journal(r);
      continue;
    }
    if (kind != "point" || !index_of_.count(r.value("key", ""))) continue;
    PointResult p = point_from_journal(r);
    // A point left out because its package was not compiled runs when the package is there
    // (journals before the split wrote "compile" for it: a point that needs a package).
    if (p.failure.source == FailureSource::kPackage ||
        (p.failure == PointFailure::answered(name_of(ErrorKind::kCompile)) &&
         Artefacts::needs_package(space_.points[index_of_.at(p.key)].config, desc_.traits)))
      continue;
    // Measured on another class of machine: not comparable with this session's points.
    if (!p.machine_class.empty() && p.machine_class != machine_class) {
      other_class.insert(p.key);
      if (other_difference.empty())
        other_difference = machine_class_difference(machine_class, p.machine_class);
      continue;
    }
    if (finished_.count(p.key) && !(finished_.at(p.key).brief && !p.brief)) continue;
    const std::size_t index = index_of_.at(p.key);  // before p is moved from
    keep(index, std::move(p));
  }
  result_.resumed_points = result_.points.size();
  if (!other_class.empty())
    result_.notes.push_back(fmt::format(
        "{} point(s) of the journal were measured on another machine class ({}): measured again "
        "here, not ranked against this session's",
        other_class.size(), other_difference));
}

void Supervisor::prepare_references() {
  std::set<std::string> batches;
  for (const auto& p : space_.points) batches.insert(reference_batch(o_.workload, p.config));
  for (const auto& r : journal_->records())
    if (r.value("record", "") == "reference" && fs::exists(r.value("path", "")))
      references_[r.at("batch").get<std::string>()] = r.at("path").get<std::string>();
  fs::create_directories(o_.out_dir + "/reference");
  for (const auto& batch : batches) {
    if (references_.count(batch)) continue;
    const std::string label = batch == "n/a" ? "file" : batch;  // inputs from a file: one batch
    const std::string path = absolute(o_.out_dir + "/reference/batch-" + label + ".pt");
    NodeJob reference = job(NodeJobKind::kWorker, "reference-batch-" + label);
    reference.request = to_request(ReferenceRequest{o_.workload, batch, path});
    report("preparing");
    const WorkerOutcome out = runner_->run(reference).outcome;
    if (interrupted_) throw Interrupted("interrupted while computing the references");
    if (out.ending == Ending::kAnswered && out.response.value("ok", false)) {
      budget_.add_startup(out.wall_s);
      references_[batch] = path;
      journal_->append(
          {{"record", "reference"}, {"session", session_}, {"batch", batch}, {"path", path}});
      continue;
    }
    // The user's own mistakes stop the run; a batch too big for the machine only costs its points.
    if (out.ending == Ending::kAnswered) {
      const json& e = out.response.at("error");
      const auto kind = error_kind_named(e.value("kind", "runtime"));
      if (kind && *kind != ErrorKind::kRuntime && *kind != ErrorKind::kResourceLimit)
        rethrow_worker_error(e, "the fp32 reference at batch " + batch);
      reference_failures_[batch] =
          "the fp32 reference at batch " + batch + " failed: " + e.value("message", "");
    } else {
      reference_failures_[batch] = "the fp32 reference at batch " + batch + " " + out.message;
    }
  }
  if (reference_failures_.size() == batches.size())
    throw RuntimeFailure(reference_failures_.begin()->second);
}

// ---- Points

std::vector<std::size_t> Supervisor::expert_start_points() const {
  return expert_start_order(space_, desc_.traits, runner_->machines().environment.cpu_isa);
}

// The guides' starts, each with what it is expected to cost (its compile included).
std::string Supervisor::starts_text() const {
  std::string starts;
  for (const std::size_t i : expert_start_points()) {
    const ResolvedConfiguration c = resolve(space_.points[i].config, desc_.traits);
    starts += fmt::format("{}{} {} ~{:.0f} s", starts.empty() ? "" : ", ",
                          runtime_of(c, desc_.traits).label(), c.value("precision"),
                          budget_.point_cost_s(i, true));
  }
  return starts;
}

std::size_t Supervisor::origin_screen_points() const {
  std::size_t n = 0;
  for (const auto& p : space_.points) n += p.changes <= 1;
  return n;
}

PointResult Supervisor::prepare_point(const Proposal& proposal, json& request) {
  const SpacePoint& point = space_.points[proposal.point];
  PointResult r;
  r.key = point.key;
  r.changes = point.changes;
  r.time_s = proposal.brief ? budget_.brief_time_s() : o_.workload.time_s;
  r.brief = proposal.brief;
  r.machine_class = runner_->machines().machine_class;
  const std::string batch = reference_batch(o_.workload, point.config);
  const auto failed = [&r](FailureSource source, const std::string& why) {
    r.status = PointStatus::kFailed;
    r.failure.source = source;
    r.reason = why;
    return r;
  };
  if (const auto it = reference_failures_.find(batch); it != reference_failures_.end())
    return failed(FailureSource::kReference, it->second);
  if (const auto why = artefacts_->ensure(proposal.point))
    return failed(FailureSource::kPackage, *why);
  BenchOptions workload = o_.workload;
  workload.time_s = r.time_s;
  // A brief point ranks candidates on a few of a stream's batches; a full one times more.
  workload.stream_timed_batches = proposal.brief ? kBriefTimedBatches : kFullTimedBatches;
  workload.check_padding = !proposal.brief;
  // A brief point clearly behind the leader so far stops early (the throughput objective only:
  // a latency point is ranked on its own calls' spread). A point in full decides: it never does.
  if (proposal.brief && o_.objective.higher_is_better())
    for (const auto& [key, done] : finished_)
      if (done.status == PointStatus::kOk && done.metrics.valid)
        workload.leader_samples_per_s = std::max(workload.leader_samples_per_s, done.metrics.throughput);
  workload.reference_files = {{batch, references_.at(batch)}};
  request = to_request(MeasureRequest{workload, point.config.to_string()});
  return r;
}

void Supervisor::read_outcome(std::size_t index, const WorkerOutcome& out, PointResult& r) {
  r.wall_s = out.wall_s;
  if (out.ending != Ending::kAnswered) {
    r.status = PointStatus::kFailed;
    r.failure = PointFailure::ended(out.ending);
    r.reason = out.message;
    return;
  }
  if (!out.response.value("ok", false)) {
    r.status = PointStatus::kFailed;
    r.failure = PointFailure::answered(out.response.at("error").value("kind", "runtime"));
    r.reason = out.response.at("error").value("message", "");
    return;
  }
  std::optional<Measurement> measured;
  try {
    measured = from_reply<MeasureReply>(out.response, "measure").result.measurement;
  } catch (const std::exception& e) {
    r.reason = e.what();
  }
  if (!measured) {
    r.status = PointStatus::kFailed;
    r.failure = PointFailure::answered(name_of(ErrorKind::kProtocol));
    r.reason = "the worker's measure reply does not read" + (r.reason.empty() ? "" : ": " + r.reason);
    return;
  }
  const Measurement& m = *measured;
  r.measurement = out.response.at("result").at("measurement");  // the journal keeps it whole
  // A graph's price, left out of the walls: its compile and a stream's first pass (recompiles).
  if (artefacts_->in_python(index) && m.compile_s > 0 && !m.compile_cache_hit) {
    r.own_compile_s = m.compile_s + (m.stream ? std::max(0.0, m.stream->warm_s) : 0);
    artefacts_->record_worker_compile(index, r.own_compile_s);
  }
  r.metrics = metrics_of(m);
  r.score = objective_score(o_.objective, r.metrics);
  const double timed_s = to_seconds(m.samples.measured) + to_seconds(m.samples.warmup.total);
  r.overhead_s = std::max(0.0, out.wall_s - timed_s);
  if (auto why = o_.guard.check(r.metrics)) {
    r.status = PointStatus::kGuarded;
    r.reason = *why;
  } else {
    r.status = PointStatus::kOk;
  }
}

// The search hears of each point as it is kept, and whether it stopped behind the leader.
void Supervisor::keep(std::size_t index, PointResult point) {
  search_->record(index, point.brief,
                  point.status == PointStatus::kOk ? std::optional(point.score) : std::nullopt);
  if (point.metrics.stopped_early) search_->stopped_behind(index);
  if (finished_.count(point.key)) {
    // A full measurement replaces the brief one, in its place.
    for (auto& p : result_.points)
      if (p.key == point.key) p = point;
  } else {
    result_.points.push_back(point);
  }
  finished_[point.key] = std::move(point);
}

void Supervisor::record_point(const Proposal& proposal, PointResult p) {
  const SpacePoint& point = space_.points[proposal.point];
  p.stage = proposal.stage;
  (p.brief ? result_.brief_points : result_.full_points) += 1;
  json record = to_json(p);
  record["record"] = "point";
  record["session"] = session_;
  record["configuration"] = point.config.to_string();
  record["measurement"] = p.measurement;
  p.measurement = compile_part(p.measurement);  // the rest is in the journal, not in memory
  journal_->append(record);
  ++done_;
  if (p.status != PointStatus::kOk) ++failed_;
  planned_ = std::max(planned_, done_);
  keep(proposal.point, std::move(p));
  report(phase_);
}

// ---- The sweep: one loop, whatever runs the jobs

bool Supervisor::start_points(std::map<std::string, Out>& out, std::optional<Proposal>& held) {
  while (runner_->idle() > 0 && (held || out.empty() || search_->proposes_ahead())) {
    std::optional<Proposal> proposal = held;
    held.reset();
    if (!proposal) {
      double out_s = 0;
      for (const auto& [ticket, o] : out) out_s += o.cost_s;
      proposal = search_->next(budget_.view(out_s));
    }
    if (!proposal) return false;
    // A compile here beside a point timed on the same machine would disturb it.
    if (!out.empty() && artefacts_->pending(proposal->point)) {
      held = proposal;
      return true;
    }
    const SpacePoint& point = space_.points[proposal->point];
    current_ = point.key;
    json request;
    PointResult p = prepare_point(*proposal, request);
    if (request.is_null()) {
      record_point(*proposal, std::move(p));
      continue;
    }
    const double cost = budget_.point_cost_s(proposal->point, proposal->brief);
    out[runner_->start(point_job(point, request, proposal->brief))] =
        Out{*proposal, std::move(p), cost};
  }
  return true;
}

void Supervisor::finish_point(std::map<std::string, Out>& out, JobEnd& end) {
  const auto it = out.find(end.ticket);
  if (it == out.end()) return;
  Out o = std::move(it->second);
  out.erase(it);
  // A point stopped by Ctrl-C measured nothing: it runs again on --resume.
  if (end.outcome.ending == Ending::kStopped && interrupted_) return;
  o.point.node = end.node_label;
  o.point.dispatch_s = end.dispatch_s;
  o.point.node_lost = end.lost;
  o.point.shared_worker = end.shared_worker;
  read_outcome(o.proposal.point, end.outcome, o.point);
  // A point refused before it ran says nothing of the time; a compile is priced apart.
  if (o.point.wall_s > 0) {
    budget_.add_point(o.point.brief, artefacts_->in_python(o.proposal.point), end.fresh_worker,
                      std::max(0.0, o.point.wall_s - o.point.own_compile_s));
    if (o.point.status != PointStatus::kFailed)
      budget_.add_overhead(std::max(0.0, o.point.overhead_s - o.point.own_compile_s));
  }
  record_point(o.proposal, std::move(o.point));
}

void Supervisor::sweep() {
  phase_ = "sweeping";
  const double sweep_start = budget_.elapsed_s();
  result_.search = o_.search;
  const bool smart = o_.search == SearchKind::kSmart;
  if (smart)
    budget_.set_brief_time_s(budget_.choose_brief_time_s(
        std::min(space_.points.size(), 2 * origin_screen_points()), finalist_count()));
  result_.brief_time_s = smart ? budget_.brief_time_s() : 0;
  PlanInputs in;
  in.search = o_.search;
  in.total = space_.points.size();
  in.finished = finished_.size();
  in.origin_screen = origin_screen_points();
  in.axes = space_.axes.size();
  in.finalists = finalist_count();
  in.full_time_s = o_.workload.time_s;
  in.starts = smart ? starts_text() : "";
  in.compiles = smart ? artefacts_->plan_text() : "";
  in.machines = runner_->machines().plan;
  if (MachineLoad* load = runner_->machine_load()) {
    load->before_sweep_ends_here();
    load->sample();
    if (load->before() && load->busy())
      in.machines = (in.machines.empty() ? "" : in.machines + "; ") + busy_text(*load, true);
  }
  result_.plan = make_plan(in, budget_);
  planned_ = result_.plan.points;
  if (!result_.plan.budget_note.empty()) result_.notes.push_back(result_.plan.budget_note);
  if (progress_) {
    TuneStatus s;
    s.phase = "plan";
    s.message = result_.plan.summary;
    s.planned = planned_;
    progress_(s);
  }
  std::map<std::string, Out> out;  // ticket -> the point it measures
  std::optional<Proposal> held;    // its package compiles here once no point is out
  for (;;) {
    if (stop_requested()) {
      runner_->cancel_all();  // what is out is lost; what finished is in the journal
      break;
    }
    if (runner_->slots() == 0)
      throw ClusterError("every node of the cluster's machine class was lost: " +
                         std::to_string(finished_.size()) + " point(s) are in the journal");
    // Asked again after every wait: a search that had nothing while points were out (the budget
    // held for them, finalists not yet known) may propose once they are back.
    const bool more = start_points(out, held);
    if (out.empty() && !held && !more) break;
    for (JobEnd& end : runner_->wait(0.1)) finish_point(out, end);
    report(phase_);
  }
  runner_->release();  // no C++ worker idle beside the confirmation's (the Python ones stay)
  result_.search_spent = search_->spent();
  result_.brief_workers = runner_->shared_workers_started();
  note_budget_after_sweep(sweep_start);
}

TuneResult run_tune(const TuneOptions& options, TimeSource& time, const TuneProgress& progress,
                    const TuneInterrupt& interrupt) {
  Supervisor supervisor(options, time, progress, interrupt);
  return supervisor.run();
}

}  // namespace torchperf
