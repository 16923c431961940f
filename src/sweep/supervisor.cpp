#include "supervisor.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "torchperf/bench/measurement_json.h"
#include "torchperf/cluster/machine_class.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/json_fields.h"
#include "torchperf/measure/environment.h"
#include "torchperf/models/aoti_package.h"
#include "torchperf/models/model.h"
#include "torchperf/runtime/runtime.h"
#include "torchperf/worker/python_worker.h"
#include "torchperf/worker/worker.h"

namespace torchperf {

using nlohmann::json;
namespace fs = std::filesystem;

std::string Supervisor::absolute(const std::string& path) const {
  return fs::absolute(path).lexically_normal().string();
}

// A job's log goes to OUT/workers on whichever machine runs it: the nodes see the driver's paths
// (docs/cluster.md), so every path a job names is absolute.
NodeJob Supervisor::node_job(NodeJobKind kind, const std::string& log_name) const {
  NodeJob job;
  job.kind = kind;
  job.executable = o_.worker_executable;
  job.log_dir = absolute(o_.out_dir + "/workers");
  job.log_name = log_name;
  job.limits = limits_;
  return job;
}

// A point's job: the Python runtime timed block by block where it runs; a C++ point in a fresh
// worker started with its worker knobs' environment.
NodeJob Supervisor::point_job(const SpacePoint& point, const json& request) const {
  const std::string log_name = fmt::format("point-{}", fnv1a(point.key).substr(0, 10));
  if (worker_of(point.config) == RuntimeWorker::kPython) {
    const auto measure = from_request<MeasureRequest>(request);
    NodeJob job = node_job(NodeJobKind::kPython, log_name);
    job.workload = measure.workload;
    job.configuration = point.config.to_string();
    return job;
  }
  NodeJob job = node_job(NodeJobKind::kWorker, log_name);
  job.request = request;
  job.environment = worker_environment(point.config);
  return job;
}

WorkerOutcome Supervisor::run_job(const NodeJob& job, const std::function<bool(double)>& tick) {
  if (!pool_) {  // run_node_job makes the log folder, here or on the node
    SteadyTimeSource clock;
    return run_node_job(job, clock, tick);
  }
  NodeJobResult r = pool_->run(job, tick);
  last_node_ = r.node_label;
  return r.outcome;
}

WorkerOutcome Supervisor::launch(const json& request, const std::string& log_name,
                                 double timeout_s, const WorkerEnvironment& environment) {
  NodeJob job = node_job(NodeJobKind::kWorker, log_name);
  job.limits.timeout_s = timeout_s;
  job.request = request;
  job.environment = environment;
  return run_job(job, [this](double t) { return tick(t); });
}

bool Supervisor::tick(double within_point) {
  report(phase_, within_point);
  if (interrupt_ && interrupt_()) {
    interrupted_ = true;
    return false;
  }
  return true;
}

// Runs a job whose failure is the run's failure (describe, reference).
json Supervisor::ask(const json& request, const std::string& log_name, const std::string& what) {
  const WorkerOutcome out = launch(request, log_name, limits_.timeout_s);
  startup_walls_.push_back(out.wall_s);  // a worker's start-up and one model load, measured
  if (interrupted_) throw Interrupted("interrupted while " + what);
  if (out.exit != WorkerExit::kAnswered)
    throw RuntimeFailure(what + ": the worker " + out.message + " (log: " + o_.out_dir +
                         "/workers/" + log_name + ".log)");
  if (!out.response.value("ok", false)) rethrow_worker_error(out.response.at("error"), what);
  return out.response;
}

namespace {

// The median: one cold start, one graph compile or one point that hung until its timeout does not
// make every later point look that slow (a mean of 10 s walls and one 120 s hang is 20 s).
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// A worker's start-up (loading LibTorch and the model, the accuracy check) before any timing,
// until the describe and reference jobs have measured one.
constexpr double kStartupGuessS = 2.0;

}  // namespace

// What a point costs, from this session's points of that length; before any, warm-up and
// measurement at their caps plus start-up. A full point not yet seen costs a brief one plus the
// longer caps, and the start-up of a worker of its own: it is estimated from the brief points that
// started their shared worker (the others paid no start-up).
double Supervisor::point_estimate_s(bool brief) const {
  const double full_time = o_.workload.time_s;
  const double brief_time = brief_time_s_ > 0 ? brief_time_s_ : full_time;
  if (brief) {
    if (!brief_walls_.empty()) return median(brief_walls_);
    if (!full_walls_.empty()) return median(full_walls_);
    return 2 * brief_time + startup_s();
  }
  if (!full_walls_.empty()) return median(full_walls_);
  if (!fresh_brief_walls_.empty())
    return median(fresh_brief_walls_) + 2 * (full_time - brief_time);
  if (!brief_walls_.empty()) return median(brief_walls_) + 2 * (full_time - brief_time);
  return 2 * full_time + startup_s();
}

// The describe and reference jobs each start a worker and load the model: what a point pays
// before its warm-up, known before the first point (a ViT-B's is ~8 s, not 2).
double Supervisor::startup_s() const {
  return startup_walls_.empty() ? kStartupGuessS : median(startup_walls_);
}

// A quarter of the point time, or less when the budget could not otherwise screen every one-knob
// change and still measure the finalists in full: a slow model is measured more briefly rather
// than left half-screened.
double Supervisor::choose_brief_time_s() const {
  const double full_time = o_.workload.time_s;
  const double wanted = std::min(full_time, std::max(0.2, full_time / 4));
  if (o_.budget_s <= 0) return wanted;
  const std::size_t screen = std::min(space_.points.size(), 2 * origin_screen_points());
  const double finals = static_cast<double>(finalist_count()) * (2 * full_time + startup_s());
  const double room = (o_.budget_s - elapsed() - confirmation_reserve_s()) * nodes() - finals;
  const double per_point = room / static_cast<double>(std::max<std::size_t>(1, screen));
  // Where start-up alone does not fit, no brief time makes the screen fit: a shorter one would
  // only rank on noise (the plan says what the budget fits instead).
  if (per_point < startup_s() + 2 * 0.1) return wanted;
  return std::clamp((per_point - startup_s()) / 2, 0.1, wanted);
}

// The smart search's finalists: at least one more than the leaders, so a runner-up is measured
// in full too.
std::size_t Supervisor::finalist_count() const {
  return std::max<std::size_t>(o_.leaders + 1, 4);
}

// The origin and its one-knob changes: the smart search's first screen. Its second, around the
// expert start, is about as large.
std::size_t Supervisor::origin_screen_points() const {
  std::size_t n = 0;
  for (const auto& p : space_.points) n += p.changes <= 1;
  return n;
}

double Supervisor::confirmation_reserve_s() const {
  // Leaders head to head, then the winner against baseline, careful and (when given) the model as
  // given: interleaved pairs, each with twice the point time, plus start-up.
  // A slow point (a big batch, emulated bf16) makes a slow pair: at least two points' worth.
  const double pairs = static_cast<double>(o_.leaders - 1) + 2 + (o_.as_given.empty() ? 0 : 1);
  return pairs * std::max(8 * o_.workload.time_s + 2 * startup_s(), 2 * point_estimate_s());
}

void Supervisor::report(const std::string& phase, double within_point) {
  if (!progress_) return;
  TuneStatus s;
  s.phase = phase;
  s.done = done_;
  s.failed = failed_;
  s.planned = planned_;
  // Most of a smart search's points are brief; its few full ones are in the reserve's slack.
  const double est = point_estimate_s(o_.search == SearchKind::kSmart);
  const double progress_points = static_cast<double>(done_) + std::min(0.95, within_point / est);
  s.fraction = planned_ ? progress_points / static_cast<double>(planned_) : 0;
  s.eta_s = std::max(0.0, static_cast<double>(planned_) - progress_points) * est / nodes() +
            confirmation_reserve_s();
  if (o_.budget_s > 0) s.eta_s = std::min(s.eta_s, std::max(0.0, o_.budget_s - elapsed()));
  const PointResult* best = nullptr;
  for (const auto& [key, p] : finished_)
    if (p.status == PointStatus::kOk && (!best || p.score > best->score)) best = &p;
  if (best)
    s.best =
        fmt::format("{:.4g} {}", objective_value(o_.objective, best->metrics), o_.objective.unit());
  s.current = current_;
  progress_(s);
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
    const std::string path =
        fs::absolute(o_.out_dir + "/reference/batch-" + label + ".pt").lexically_normal().string();
    const json request = to_request(ReferenceRequest{o_.workload, batch, path});
    report("preparing");
    const WorkerOutcome out = launch(request, "reference-batch-" + label, limits_.timeout_s);
    if (interrupted_) throw Interrupted("interrupted while computing the references");
    if (out.exit == WorkerExit::kAnswered && out.response.value("ok", false)) {
      startup_walls_.push_back(out.wall_s);
      references_[batch] = path;
      journal_->append(
          {{"record", "reference"}, {"session", session_}, {"batch", batch}, {"path", path}});
      continue;
    }
    // The user's own mistakes stop the run; a batch too big for the machine only costs its points.
    if (out.exit == WorkerExit::kAnswered) {
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

// A torch.export program's packages are compiled here, in this process, not in a worker (a compile
// in a worker would count against its point's time limit, and each point would pay it): each the
// first time a point needs it, so that a budget of minutes is not spent compiling packages ahead
// whose points the search never reaches. Those already in the cache are recorded at once. The
// search knows what each compile will cost (point_cost_s) before it proposes the point.
void Supervisor::prepare_packages() {
  const auto model_file = [&]() -> std::string {
    if (desc_.traits.program_form) {
      if (program_.empty()) program_ = open_model(o_.workload.model)->program_path();
      return program_;
    }
    std::error_code ec;
    return fs::is_regular_file(o_.workload.model, ec) ? o_.workload.model : std::string();
  };
  bool compiles = false;
  for (const auto& p : space_.points) {
    const ResolvedConfiguration c = resolve(p.config, desc_.traits);
    const Runtime& runtime = runtime_of(c, desc_.traits);
    if (!runtime.compiles(c.value("graph"))) continue;
    compiles = true;
    // A C++ runtime's compile is AOTInductor's package; torch.compile's point pays its own.
    if (runtime.worker() != RuntimeWorker::kCpp) continue;
    AotiOptions a;
    a.precision = c.value("precision");
    a.max_autotune = c.value("graph") == "aoti-max-autotune";
    a.device = desc_.traits.cuda ? "cuda" : "cpu";
    const auto environment = worker_environment(p.config);  // the aten_isa knob's cap
    if (const auto cap = environment.find("ATEN_CPU_CAPABILITY"); cap != environment.end())
      a.aten_capability = cap->second;
    package_of_point_[p.key] = a.to_string();
    packages_.emplace(a.to_string(), a);
  }
  if (!compiles) return;
  try {
    if (const std::string file = model_file(); !file.empty())
      costs_ = CompileCosts(compile_costs_path(file));
  } catch (const ModelError&) {
    if (!packages_.empty()) throw;  // the program itself is unreadable: no point can run
  }
  for (const auto& [name, options] : packages_) {
    const std::string path = cached_aoti_package(model_file(), options);
    if (path.empty()) continue;
    packages_ready_.insert(name);
    CompiledPackageRecord record;
    record.options = name;
    record.path = path;
    record.cache_hit = true;
    keep_package(record);
  }
}

void Supervisor::keep_package(const CompiledPackageRecord& record) {
  journal_->append({{"record", "package"},
                    {"session", session_},
                    {"options", record.options},
                    {"path", record.path},
                    {"compile_s", record.compile_s},
                    {"cache_hit", record.cache_hit},
                    {"failure", record.failure}});
  result_.packages.push_back(record);
}

bool Supervisor::ensure_package(const std::string& name) {
  if (packages_ready_.count(name)) return true;
  if (package_failures_.count(name)) return false;
  const auto wanted = packages_.find(name);
  if (wanted == packages_.end()) return true;  // not a package of this space: nothing to do
  const std::string phase = phase_;
  phase_ = "compiling";
  current_ = "compiling " + name;
  report(phase_);
  CommandLimits limits = within(o_.workload.compile_timeout_s, limits_.memory_cap_bytes);
  limits.keep_going = [this](double) { return !(interrupt_ && interrupt_()); };
  CompiledPackageRecord record;
  record.options = name;
  try {
    const CompiledPackage package = ensure_aoti_package(program_, wanted->second, limits);
    record.path = package.path;
    record.compile_s = package.compile_s;
    record.cache_hit = package.cache_hit;
    if (!package.cache_hit) costs_.record("aoti:" + name, package.compile_s);
    packages_ready_.insert(name);
  } catch (const Interrupted&) {
    interrupted_ = true;
    throw Interrupted("interrupted while compiling the AOTInductor package " + name);
  } catch (const ModelError&) {
    throw;  // the program itself is unreadable: no point can run
  } catch (const Error& e) {
    record.failure = e.what();
    package_failures_[name] = record.failure;
  }
  keep_package(record);
  phase_ = phase;
  // Every package failed and every point needs one: nothing of this space can run.
  if (!record.failure.empty() && package_failures_.size() == packages_.size() &&
      package_of_point_.size() == space_.points.size())
    throw CompileError(record.failure);
  return record.failure.empty();
}

void Supervisor::ensure_packages_of(const Configuration& config) {
  try {
    const ResolvedConfiguration r = resolve(config, desc_.traits);
    if (const auto it = package_of_point_.find(r.to_string()); it != package_of_point_.end())
      ensure_package(it->second);
  } catch (const ConfigError&) {
    // Not a configuration of this space: the comparison says what is wrong with it.
  }
}

bool Supervisor::side_ready(const Configuration& config, std::string& why) {
  std::string key;
  try {
    key = resolve(config, desc_.traits).to_string();
  } catch (const ConfigError&) {
    return true;  // the comparison says what is wrong with it
  }
  const auto it = package_of_point_.find(key);
  if (it == package_of_point_.end() || packages_ready_.count(it->second)) return true;
  if (const auto failed = package_failures_.find(it->second); failed != package_failures_.end()) {
    why = failed->second;
    return false;
  }
  SpacePoint probe;
  probe.key = key;
  const double estimate = compile_estimate_s(probe);
  const double left = o_.budget_s - elapsed();
  if (o_.budget_s > 0 && estimate > left) {
    why = fmt::format("its AOTInductor package ({}) is not compiled: about {:.0f} s, and {:.0f} s "
                      "of the budget is left",
                      it->second, estimate, std::max(0.0, left));
    return false;
  }
  if (ensure_package(it->second)) return true;
  why = package_failures_.at(it->second);
  return false;
}

// torch.compile's cache artifacts of the winner (its Python point wrote them beside its log) are
// kept as OUT/artifacts/compile_cache.bin, where apply loads them instead of compiling again; the
// other points' are removed (each can be megabytes).
void Supervisor::keep_winner_artifacts() {
  const std::string workers = o_.out_dir + "/workers";
  std::error_code ec;
  if (result_.winner) {
    const std::string saved =
        compile_artifacts_path(workers, fmt::format("point-{}", fnv1a(*result_.winner).substr(0, 10)));
    if (fs::exists(saved, ec)) {
      fs::create_directories(o_.out_dir + "/artifacts", ec);
      fs::copy_file(saved, o_.out_dir + "/artifacts/compile_cache.bin",
                    fs::copy_options::overwrite_existing, ec);
    }
  }
  for (const auto& entry : fs::directory_iterator(workers, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 18 && name.compare(name.size() - 18, 18, ".compile_cache.bin") == 0)
      fs::remove(entry.path(), ec);
  }
}

bool Supervisor::in_python(const SpacePoint& point) const {
  return worker_of(point.config) == RuntimeWorker::kPython;
}

namespace {

// What a compile costs before any has been seen for this model, on a CPU of a few cores: an
// AOTInductor package of a ResNet-18 took 20-136 s here, torch.compile's first call 15-60 s.
// max-autotune benchmarks kernel choices: about three times as long.
constexpr double kPackageGuessS = 60;
constexpr double kCompileGuessS = 30;
constexpr double kAutotuneFactor = 3;
// The Python worker's start-up (the interpreter, torch and the program) before anything is timed.
constexpr double kPythonStartupGuessS = 5;

bool autotunes(const std::string& graph_or_options) {
  return graph_or_options.find("max-autotune") != std::string::npos ||
         graph_or_options.find("max_autotune=1") != std::string::npos;
}

}  // namespace

double Supervisor::compile_estimate_s(const SpacePoint& point) const {
  if (const auto it = package_of_point_.find(point.key); it != package_of_point_.end()) {
    const std::string& name = it->second;
    if (packages_ready_.count(name) || package_failures_.count(name)) return 0;
    if (const auto seen = costs_.seen("aoti:" + name)) return *seen;
    // From the longest package compiled so far, scaled the way max-autotune scales it.
    std::optional<double> plain, tuned;
    for (const auto& [other, options] : packages_)
      if (const auto s = costs_.seen("aoti:" + other))
        (options.max_autotune ? tuned : plain) = std::max(*s, (options.max_autotune ? tuned : plain).value_or(0));
    const bool autotune = autotunes(name);
    if (autotune && tuned) return *tuned;
    if (!autotune && plain) return *plain;
    if (plain) return *plain * kAutotuneFactor;
    if (tuned) return *tuned / kAutotuneFactor;
    return kPackageGuessS * (autotune ? kAutotuneFactor : 1);
  }
  if (!in_python(point)) return 0;
  const ResolvedConfiguration c = resolve(point.config, desc_.traits);
  const std::string graph = c.value("graph");
  if (!runtime_of(c, desc_.traits).compiles(graph)) return 0;
  if (const auto seen = costs_.seen("compile:" + graph + ":" + point.key)) return *seen;
  if (const auto same = costs_.longest("compile:" + graph + ":")) return *same;
  if (const auto plain = costs_.longest("compile:compile:"))
    return *plain * (autotunes(graph) ? kAutotuneFactor : 1);
  return kCompileGuessS * (autotunes(graph) ? kAutotuneFactor : 1);
}

// A point's start-up, warm-up and measurement from the points of its worker's kind (a Python
// point starts an interpreter of its own; a brief C++ point shares a warm worker), plus its
// compile.
double Supervisor::point_cost_s(std::size_t index, bool brief) const {
  const SpacePoint& point = space_.points.at(index);
  double base = point_estimate_s(brief);
  if (in_python(point)) {
    const auto& walls = brief ? python_brief_walls_ : python_full_walls_;
    if (!walls.empty()) base = median(walls);
    else if (!python_brief_walls_.empty()) base = median(python_brief_walls_) + 2 * (o_.workload.time_s - brief_time_s_);
    else base += kPythonStartupGuessS;
  }
  return base + compile_estimate_s(point);
}

std::vector<std::size_t> Supervisor::expert_start_points() const {
  // Reduced precision is a start where the device computes in it: half on CUDA; bf16 on a CPU
  // with bf16 instructions (elsewhere it is emulated, slower than fp32, and only the sweep tries
  // it). On CUDA it is the guides' start itself, so it goes first.
  bool reduced = desc_.traits.cuda;
  if (!reduced)
    for (const auto& isa : class_environment_.cpu_isa)
      reduced = reduced || isa == "avx512_bf16" || isa == "amx_bf16";
  std::vector<std::size_t> plain, lowered;
  for (const auto& start : space_.expert_starts) {
    if (start.reduced_precision && !reduced) continue;
    std::string key;
    try {
      key = resolve(start.config, desc_.traits).to_string();
    } catch (const ConfigError&) {
      continue;
    }
    const auto it = index_of_.find(key);
    if (it == index_of_.end()) continue;
    (start.reduced_precision ? lowered : plain).push_back(it->second);
  }
  std::vector<std::size_t> order = desc_.traits.cuda ? lowered : plain;
  const auto& rest = desc_.traits.cuda ? plain : lowered;
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

// What the plan says of compiles: what the cache already holds and what is still to pay.
std::string Supervisor::compile_plan() const {
  std::size_t cached = packages_ready_.size(), to_compile = 0;
  double to_compile_s = 0;
  for (const auto& [name, options] : packages_) {
    if (packages_ready_.count(name)) continue;
    ++to_compile;
    SpacePoint probe;
    for (const auto& [key, package] : package_of_point_)
      if (package == name) probe.key = key;
    to_compile_s += compile_estimate_s(probe);
  }
  std::string text;
  if (!packages_.empty()) {
    text = fmt::format("AOTInductor packages: {} of {} in the cache (no compile)", cached,
                       packages_.size());
    if (to_compile > 0)
      text += fmt::format(", {} to compile when a point needs one (about {:.0f} s in all, {})",
                          to_compile, to_compile_s,
                          costs_.remembered("aoti:") > 0 || costs_.count("aoti:") > 0
                              ? "from earlier compiles of this model"
                              : "guessed: none compiled before");
  }
  std::size_t python = 0;
  for (const auto& p : space_.points)
    if (in_python(p) && compile_estimate_s(p) > 0) ++python;
  if (python > 0) {
    const std::size_t remembered = costs_.remembered("compile:");
    text += (text.empty() ? "" : "; ") +
            fmt::format("torch.compile: {} point(s) compile in their worker", python);
    text += remembered > 0 ? fmt::format(", {} compiled by earlier tunes (Inductor's cache holds "
                                         "their kernels; their cost is known)",
                                         remembered)
                           : std::string(", none compiled before (cost guessed)");
  }
  return text;
}

PointResult Supervisor::prepare_point(const SpacePoint& point, double time_s, bool brief,
                                      json& request) {
  PointResult r;
  r.key = point.key;
  r.changes = point.changes;
  r.time_s = time_s;
  r.brief = brief;
  r.machine_class = machine_class_;
  const std::string batch = reference_batch(o_.workload, point.config);
  const auto ref_failure = reference_failures_.find(batch);
  if (ref_failure != reference_failures_.end()) {
    r.status = PointStatus::kFailed;
    r.failure_kind = "reference";
    r.reason = ref_failure->second;
    return r;
  }
  last_compile_s_ = 0;
  if (const auto package = package_of_point_.find(point.key); package != package_of_point_.end())
    if (!ensure_package(package->second)) {
      r.status = PointStatus::kFailed;
      r.failure_kind = "compile";
      r.reason = package_failures_.at(package->second);
      return r;
    }
  BenchOptions workload = o_.workload;
  workload.time_s = time_s;
  workload.reference_files = {{batch, references_.at(batch)}};
  request = to_request(MeasureRequest{workload, point.config.to_string()});
  return r;
}

PointResult Supervisor::run_point(const SpacePoint& point, double time_s, bool brief) {
  json request;
  PointResult r = prepare_point(point, time_s, brief, request);
  if (request.is_null()) return r;
  // A brief point ranks candidates: it shares a worker with the brief points before it while
  // their process state is the same. A full point, which decides, has a fresh worker of its own,
  // started with its worker knobs' environment.
  WorkerOutcome out;
  if (worker_of(point.config) == RuntimeWorker::kPython) {
    // The Python runtime: this process times the Python worker's blocks (measure_python_in_worker).
    if (shared_) shared_->close();
    out = run_job(point_job(point, request), [this](double t) { return tick(t); });
  } else if (brief) {
    if (!shared_) {
      fs::create_directories(o_.out_dir + "/workers");
      shared_ = std::make_unique<SharedWorker>(o_.worker_executable, o_.out_dir + "/workers",
                                               limits_, [this](double t) { return tick(t); });
    }
    out = shared_->measure(request, point.config, limits_.timeout_s);
    r.shared_worker = true;
    if (!shared_->reused()) fresh_brief_walls_.push_back(out.wall_s);
  } else {
    // An idle shared worker holds memory and, told to (omp_wait=active), spins: gone before a
    // point that decides is measured.
    if (shared_) shared_->close();
    out = run_job(point_job(point, request), [this](double t) { return tick(t); });
  }
  read_outcome(point, out, r);
  return r;
}

void Supervisor::read_outcome(const SpacePoint& point, const WorkerOutcome& out, PointResult& r) {
  r.wall_s = out.wall_s;
  last_compile_s_ = 0;
  if (interrupted_) return;
  if (out.exit != WorkerExit::kAnswered) {
    r.status = PointStatus::kFailed;
    r.failure_kind = to_string(out.exit);
    r.reason = out.message;
    return;
  }
  if (!out.response.value("ok", false)) {
    r.status = PointStatus::kFailed;
    r.failure_kind = out.response.at("error").value("kind", "runtime");
    r.reason = out.response.at("error").value("message", "");
    return;
  }
  std::optional<Measurement> measured;
  try {
    measured = from_reply<MeasureReply>(out.response, "measure").result.measurement;
  } catch (const std::exception& e) {
    measured.reset();
    r.reason = e.what();
  }
  if (!measured) {
    r.status = PointStatus::kFailed;
    r.failure_kind = name_of(ErrorKind::kProtocol);
    r.reason = "the worker's measure reply does not read" + (r.reason.empty() ? "" : ": " + r.reason);
    return;
  }
  const Measurement& m = *measured;
  r.measurement = out.response.at("result").at("measurement");  // the journal keeps it whole
  // torch.compile's compile is paid inside the point's worker: remembered for the next tune,
  // and left out of the walls that price the points that do not compile.
  if (in_python(point) && m.compile_s > 0 && !m.compile_cache_hit) {
    last_compile_s_ = m.compile_s;
    costs_.record("compile:" + m.configuration.value("graph") + ":" + point.key, m.compile_s);
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

void Supervisor::keep(PointResult point) {
  const auto had = finished_.find(point.key);
  if (had != finished_.end()) {
    // A full measurement replaces the brief one, in its place.
    for (auto& p : result_.points)
      if (p.key == point.key) p = point;
  } else {
    result_.points.push_back(point);
  }
  finished_[point.key] = std::move(point);
}

std::string Supervisor::plan_message() {
  const std::size_t total = space_.points.size();
  const std::size_t left = total - std::min(total, finished_.size());
  const std::size_t finalists = finalist_count();
  if (o_.search == SearchKind::kExhaustive) {
    const double estimate = static_cast<double>(left) * point_estimate_s() / nodes();
    result_.estimated_full_s = estimate + confirmation_reserve_s();
    planned_ = left;
    std::string plan = fmt::format(
        "exhaustive search: {} point(s) to run ({} of {} already in the journal), about {:.1f} "
        "min at ~{:.1f} s a point, then the leaders head to head",
        left, finished_.size(), total, result_.estimated_full_s / 60, point_estimate_s());
    if (o_.budget_s > 0 && result_.estimated_full_s > o_.budget_s) {
      const double room =
          std::max(0.0, o_.budget_s - confirmation_reserve_s() - elapsed()) * nodes();
      planned_ = std::min(left, static_cast<std::size_t>(std::floor(room / point_estimate_s())));
      result_.notes.push_back(fmt::format(
          "the {} points to run need about {:.0f} min (at ~{:.1f} s a point, plus {:.0f} s to "
          "confirm the winner); the budget of {:.0f} min fits about {}: the baseline and the "
          "single-knob changes run first, then the rest in random order",
          left, result_.estimated_full_s / 60, point_estimate_s(), confirmation_reserve_s(),
          o_.budget_s / 60, planned_));
      plan = result_.notes.back();
    }
    if (!cluster_plan_.empty()) plan += "; " + cluster_plan_;
    return plan;
  }
  const std::size_t around_origin = origin_screen_points();
  const std::size_t screen = std::min(left, 2 * around_origin);
  const std::size_t explore = std::max<std::size_t>(4, space_.axes.size());
  const bool tiny = total <= finalists;
  planned_ = tiny ? left : std::min(left, screen + explore + finalists);
  const double brief = point_estimate_s(true), full = point_estimate_s(false);
  // The guides' starts, each with what it is expected to cost (its compile included).
  std::string starts;
  for (const std::size_t i : expert_start_points()) {
    const ResolvedConfiguration c = resolve(space_.points[i].config, desc_.traits);
    starts += fmt::format("{}{} {} ~{:.0f} s", starts.empty() ? "" : ", ",
                          runtime_of(c, desc_.traits).label(), c.value("precision"),
                          point_cost_s(i, true));
  }
  const std::string screens =
      starts.empty()
          ? fmt::format("the origin and its {} one-knob changes, then the guides' expert start "
                        "and its one-knob changes",
                        around_origin - std::min<std::size_t>(around_origin, 1))
          : fmt::format("first the guides' starts ({}), then the one-knob changes around the "
                        "best of them, then the origin and its {} one-knob changes",
                        starts, around_origin - std::min<std::size_t>(around_origin, 1));
  const double screen_s = static_cast<double>(screen) * brief;
  const double finals_s = static_cast<double>(finalists) * full;
  result_.estimated_full_s =
      tiny ? static_cast<double>(left) * full + confirmation_reserve_s()
           : screen_s + static_cast<double>(explore) * brief + finals_s + confirmation_reserve_s();
  std::string plan =
      tiny ? fmt::format("smart search: the space has {} point(s), each measured once in full "
                         "(~{:.1f} s a point), then the leaders head to head",
                         total, full)
           : fmt::format(
                 "smart search over {} points: {}, measured briefly ({:.2g} s, ~{:.1f} s a point "
                 "and its compile), then the untried points a fitted model ranks best per second "
                 "of cost ({}), then the best {} again in full ({:.2g} s, ~{:.1f} s a point) and "
                 "the leaders head to head: {}",
                 total, screens, brief_time_s_, brief,
                 o_.budget_s > 0 ? std::string("while the budget lasts")
                                 : fmt::format("until they stop beating the best, at least {}",
                                               explore),
                 finalists, o_.workload.time_s, full,
                 o_.budget_s > 0
                     ? fmt::format("within the budget of {:.0f} min", o_.budget_s / 60)
                     : fmt::format("about {:.1f} min", result_.estimated_full_s / 60));
  if (const std::string compiles = compile_plan(); !compiles.empty()) plan += "; " + compiles;
  if (!cluster_plan_.empty()) plan += "; " + cluster_plan_;
  if (!tiny && o_.budget_s > 0) {
    const double room = (o_.budget_s - elapsed() - confirmation_reserve_s()) * nodes();
    if (room < screen_s + finals_s) {
      const std::size_t fits = static_cast<std::size_t>(
          std::max(0.0, std::floor((room - finals_s) / std::max(brief, 1e-9))));
      result_.notes.push_back(fmt::format(
          "the budget of {:.0f} min is too small to screen every one-knob change: that needs "
          "about {:.1f} min ({} brief points at ~{:.1f} s, {} finalists at ~{:.1f} s and {:.0f} s "
          "to confirm the winner); about {} screening points fit, then the best of them in full",
          o_.budget_s / 60, (screen_s + finals_s + confirmation_reserve_s()) / 60, screen, brief,
          finalists, full, confirmation_reserve_s(), std::min(fits, screen)));
      plan += "; " + result_.notes.back();
    }
  }
  return plan;
}

BudgetView Supervisor::budget_view(double out_s) const {
  BudgetView view;
  // A cluster measures a point per node at once: its budget pays for that many seconds of points
  // per second of wall time, less what the points still out will take.
  if (o_.budget_s > 0)
    view.remaining_s = (o_.budget_s - elapsed() - confirmation_reserve_s()) * nodes() - out_s;
  view.brief_point_s = point_estimate_s(true);
  view.full_point_s = point_estimate_s(false);
  view.point_s = [this](std::size_t i, bool brief) { return point_cost_s(i, brief); };
  return view;
}

void Supervisor::record_point(const Proposal& proposal, PointResult p) {
  const SpacePoint& point = space_.points[proposal.point];
  p.stage = proposal.stage;
  // A point refused before it ran (its reference or package failed) says nothing of the time.
  if (p.wall_s > 0) {
    const double wall = std::max(0.0, p.wall_s - last_compile_s_);
    (p.brief ? brief_walls_ : full_walls_).push_back(wall);
    if (in_python(point)) (p.brief ? python_brief_walls_ : python_full_walls_).push_back(wall);
  }
  (p.brief ? result_.brief_points : result_.full_points) += 1;
  json record = to_json(p);
  record["record"] = "point";
  record["session"] = session_;
  record["configuration"] = point.config.to_string();
  record["measurement"] = p.measurement;
  p.measurement = compile_part(p.measurement);  // the rest is in the journal, not in memory
  journal_->append(record);
  search_->record(proposal.point, p.brief,
                  p.status == PointStatus::kOk ? std::optional<double>(p.score) : std::nullopt);
  ++done_;
  if (p.status != PointStatus::kOk) ++failed_;
  planned_ = std::max(planned_, done_);
  keep(std::move(p));
  report(phase_);
}

bool Supervisor::compile_pending(const SpacePoint& point) const {
  const auto it = package_of_point_.find(point.key);
  return it != package_of_point_.end() && !packages_ready_.count(it->second) &&
         !package_failures_.count(it->second);
}

void Supervisor::sweep_on_cluster() {
  struct Out {
    Proposal proposal;
    PointResult point;
    double cost_s = 0;
  };
  std::map<std::string, Out> out;  // ticket -> the point it measures
  std::optional<Proposal> held;    // its package compiles here once no point is out
  for (;;) {
    if (interrupt_ && interrupt_()) interrupted_ = true;
    if (interrupted_) {
      pool_->cancel_all();  // what is out is lost; what finished is in the journal
      return;
    }
    if (pool_->size() == 0)
      throw ClusterError("every node of the cluster's machine class was lost: " +
                           std::to_string(finished_.size()) + " point(s) are in the journal");
    bool exhausted = false;
    while (pool_->idle() > 0 && (held || out.empty() || search_->proposes_ahead())) {
      std::optional<Proposal> proposal = held;
      if (!proposal) {
        double out_s = 0;
        for (const auto& [ticket, o] : out) out_s += o.cost_s;
        proposal = search_->next(budget_view(out_s));
      }
      held.reset();
      if (!proposal) {
        exhausted = true;
        break;
      }
      const SpacePoint& point = space_.points[proposal->point];
      // A compile on the driver beside a timed point on the same machine would disturb it.
      if (!out.empty() && compile_pending(point)) {
        held = proposal;
        break;
      }
      current_ = point.key;
      json request;
      PointResult p = prepare_point(point, proposal->brief ? brief_time_s_ : o_.workload.time_s,
                                    proposal->brief, request);
      if (request.is_null()) {
        record_point(*proposal, std::move(p));
        continue;
      }
      const double cost = point_cost_s(proposal->point, proposal->brief);
      const std::string ticket = pool_->start(point_job(point, request));
      out[ticket] = Out{*proposal, std::move(p), cost};
    }
    if (out.empty() && !held) {
      if (exhausted) return;
      continue;
    }
    for (NodeJobResult& done : pool_->wait(0.1)) {
      const auto it = out.find(done.ticket);
      if (it == out.end()) continue;
      Out o = std::move(it->second);
      out.erase(it);
      const SpacePoint& point = space_.points[o.proposal.point];
      o.point.node = done.node_label;
      o.point.dispatch_s = done.dispatch_s;
      o.point.node_lost = done.lost;
      read_outcome(point, done.outcome, o.point);
      if (o.point.brief && o.point.wall_s > 0) fresh_brief_walls_.push_back(o.point.wall_s);
      record_point(o.proposal, std::move(o.point));
    }
    report(phase_);
  }
}

void Supervisor::sweep() {
  phase_ = "sweeping";
  const double sweep_start = elapsed();
  result_.search = o_.search;
  brief_time_s_ = o_.search == SearchKind::kSmart ? choose_brief_time_s() : o_.workload.time_s;
  result_.brief_time_s = o_.search == SearchKind::kSmart ? brief_time_s_ : 0;
  const std::string plan = plan_message();
  if (progress_) {
    TuneStatus s;
    s.phase = "plan";
    s.message = plan;
    s.planned = planned_;
    progress_(s);
  }
  if (pool_) {
    sweep_on_cluster();
  } else {
    for (;;) {
      if (interrupt_ && interrupt_()) interrupted_ = true;
      if (interrupted_) break;
      const auto proposal = search_->next(budget_view());
      if (!proposal) break;
      const SpacePoint& point = space_.points[proposal->point];
      current_ = point.key;
      PointResult p =
          run_point(point, proposal->brief ? brief_time_s_ : o_.workload.time_s, proposal->brief);
      if (interrupted_) break;
      record_point(*proposal, std::move(p));
    }
  }
  if (shared_) shared_->close();  // not idle beside the confirmation's workers
  result_.search_spent = search_->spent();
  result_.brief_workers = shared_ ? shared_->started() : 0;
  std::size_t unmeasured = 0;
  for (const auto& p : space_.points) unmeasured += !finished_.count(p.key);
  result_.budget_exhausted = search_->cut_by_budget();
  result_.not_run = result_.budget_exhausted ? unmeasured : 0;
  const double brief = point_estimate_s(true), full = point_estimate_s(false);
  const std::size_t screen = std::min(space_.points.size(), 2 * origin_screen_points());
  const std::size_t explore = std::max<std::size_t>(4, space_.axes.size());
  const double needs = sweep_start + static_cast<double>(screen + explore) * brief +
                       static_cast<double>(finalist_count()) * full + confirmation_reserve_s();
  // The plan's note was written from guesses; this one from what the points took, when the
  // budget could not pay for the screens, a few guesses, the finals and the confirmation.
  if (result_.budget_exhausted && o_.search == SearchKind::kSmart && !brief_walls_.empty() &&
      needs > o_.budget_s) {
    result_.notes.push_back(fmt::format(
        "the budget of {:.0f} min is too small for this space: points took ~{:.1f} s briefly and "
        "~{:.1f} s in full (measured), and {} of {} points were left unmeasured ({}); screening "
        "the one-knob changes around the origin and the expert start, {} guesses and {} "
        "finalists need about {:.0f} min: raise --budget or pin knobs with --space",
        o_.budget_s / 60, brief, full, unmeasured, space_.points.size(), search_->spent(),
        explore, finalist_count(), needs / 60));
  }
}

TuneResult Supervisor::run() {
  // A folder this run made is removed again when the run fails before its journal exists: a
  // refused model leaves no empty run folder behind.
  std::error_code ec;
  const bool made_folder = !std::filesystem::exists(o_.out_dir, ec);
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
      std::filesystem::remove_all(o_.out_dir, ec);
    }
    throw;
  }
}

void Supervisor::connect_cluster() {
  if (o_.cluster.empty()) {
    class_environment_ = capture_environment();
    machine_class_ = machine_class_of(class_environment_);
    return;
  }
  const char* variable = std::getenv("RAY_ADDRESS");
  const std::string address = ray_address_of(o_.cluster, variable ? variable : "");
  // Each job names the driver's paths, which every node sees (docs/cluster.md): absolute ones.
  std::error_code ec;
  const bool model_file = fs::is_regular_file(o_.workload.model, ec);
  if (model_file) o_.workload.model = absolute(o_.workload.model);
  if (!o_.workload.inputs_file.empty()) o_.workload.inputs_file = absolute(o_.workload.inputs_file);
  fs::create_directories(o_.out_dir + "/workers");
  current_ = "connecting to the Ray cluster at " + address;
  report("preparing");
  cluster_ = std::make_unique<RayCluster>(address, absolute(o_.out_dir + "/workers/ray-driver.log"));
  std::vector<std::string> probe = {o_.worker_executable, "__node-probe", absolute(o_.out_dir)};
  if (model_file) probe.push_back(o_.workload.model);
  if (!o_.workload.inputs_file.empty()) probe.push_back(o_.workload.inputs_file);
  const std::vector<ClusterNode> nodes = cluster_->nodes(probe);
  std::map<std::string, std::vector<ClusterNode>> by_class;
  std::vector<std::string> classes;  // in the order the cluster lists them
  json left_out = json::array();
  for (const auto& n : nodes) {
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
    throw ClusterError("no node of the Ray cluster at " + address + " can measure a point: " +
                         (why.empty() ? std::string("it has no node") : why));
  }
  // Timings compare only within a machine class: the class with the most nodes is tuned, the
  // others are left out (a tune of their own ranks them).
  std::string chosen = classes.front();
  for (const auto& c : classes)
    if (by_class[c].size() > by_class[chosen].size()) chosen = c;
  for (const auto& c : classes)
    if (c != chosen)
      for (const auto& n : by_class[c])
        left_out.push_back(n.label() + ": another machine class (" +
                           machine_class_difference(chosen, c) +
                           "): points are ranked only within one class; tune it on its own");
  machine_class_ = chosen;
  class_environment_ = environment_from_json(by_class[chosen].front().environment);
  json labels = json::array();
  for (const auto& n : by_class[chosen]) labels.push_back(n.label());
  pool_ = std::make_unique<NodePool>(*cluster_, by_class[chosen], o_.worker_executable);
  cluster_record_ = {{"address", address},
                     {"machine_class", chosen},
                     {"nodes", labels},
                     {"left_out", left_out}};
  std::string names;
  for (const auto& l : labels) names += (names.empty() ? "" : ", ") + l.get<std::string>();
  cluster_plan_ = fmt::format(
      "on the Ray cluster at {}: {} node(s) of one machine class, one point per node at a time "
      "({}; {})",
      address, labels.size(), names, chosen);
  for (const auto& l : left_out) {
    result_.notes.push_back("cluster node left out: " + l.get<std::string>());
    cluster_plan_ += "; left out: " + l.get<std::string>();
  }
}

TuneResult Supervisor::run_locked() {
  validate(o_);
  if (o_.worker_executable.empty()) throw UsageError("tune: no worker executable given");
  const std::string path = journal_file(o_.out_dir);
  result_.journal_path = path;
  result_.objective = o_.objective;
  result_.guard = o_.guard;
  const json header = journal_header(o_);
  if (o_.resume && !std::filesystem::exists(path))
    throw ResultsError("--resume '" + o_.out_dir + "': no journal there (expected results.jsonl "
                       "from an earlier tune)");
  lock_.emplace(JournalLock::acquire(o_.out_dir));  // one writer per journal
  if (o_.resume) {
    // Refused before the file is touched (a cut-short line is trimmed only in our own journal).
    journal_.emplace(Journal::reopen(path, [&](const json& their_header) {
      json theirs = their_header.at("experiment");
      // Journals from before the smart search swept the whole cube.
      if (!theirs.contains("search")) theirs["search"] = to_string(SearchKind::kExhaustive);
      const json& ours = header.at("experiment");
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
      if (r.value("record", "") == "session")
        session_ = std::max(session_, r.value("session", 0) + 1);
  } else {
    Journal::refuse_existing(path);  // before the model is loaded
  }

  connect_cluster();
  report("preparing");
  const json described = ask(to_request(DescribeRequest{o_.workload}), "describe",
                             "loading model '" + o_.workload.model + "'");
  desc_ = from_reply<DescribeReply>(described, "describe").description;
  result_.workload = desc_;
  // Latency is judged per call at batch 1 unless the user names the batch sizes.
  auto requested = o_.space;
  if (!o_.objective.higher_is_better() && !requested.count("batch") &&
      !desc_.traits.inputs_from_file) {
    requested["batch"] = {"1"};
    result_.notes.push_back("objective " + o_.objective.to_string() +
                            ": batch pinned to 1 (name batch sizes with --batch to sweep them)");
  }
  space_ = build_space(desc_.traits, requested);
  if (!o_.as_given.empty()) {
    try {
      resolve(Configuration::parse(o_.as_given), desc_.traits);
    } catch (const std::exception& e) {
      throw UsageError("--as-given '" + o_.as_given + "': " + e.what());
    }
  }
  for (const auto& p : space_.points) by_key_[p.key] = &p;
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
  if (!journal_) journal_.emplace(Journal::create(path, header));
  journal_->append({{"record", "session"},
                    {"session", session_},
                    {"started", now_iso8601()},
                    {"environment", to_json(class_environment_)},
                    {"machine_class", machine_class_},
                    {"cluster", cluster_record_},
                    {"workload", described.at("description")},
                    {"space",
                     {{"axes", result_.axes},
                      {"points", space_.points.size()},
                      {"combinations", space_.combinations},
                      {"dropped", space_.dropped},
                      {"left_out", space_.left_out}}},
                    {"limits",
                     {{"budget_s", o_.budget_s},
                      {"point_timeout_s", limits_.timeout_s},
                      {"memory_cap_bytes", limits_.memory_cap_bytes}}}});

  // What earlier sessions finished is kept and not run again: a point once, or briefly and then
  // in full (the full measurement replaces the brief one).
  SearchOptions search;
  search.seed = o_.order_seed;
  search.finalists = finalist_count();
  for (std::size_t i = 0; i < space_.points.size(); ++i) index_of_[space_.points[i].key] = i;
  search.first = expert_start_points();
  if (o_.budget_s > 0) {
    // A budget is there to be used: exploration goes on, in the model's order, until the time
    // for the finals and the confirmation is all that is left (or every point is measured).
    search.patience = std::numeric_limits<std::size_t>::max();
    search.tolerance = std::numeric_limits<double>::infinity();
  }
  search_ = make_search(o_.search, space_, search);
  for (std::size_t i = 0; i < space_.points.size(); ++i) index_of_[space_.points[i].key] = i;
  std::set<std::string> other_class;
  std::string other_difference;
  for (const auto& r : journal_->records()) {
    const std::string kind = r.value("record", "");
    // A point left out because its package was not compiled runs when the package is there.
    if (kind == "point" && r.value("failure_kind", "") == "compile") continue;
    if (kind == "point" && by_key_.count(r.value("key", ""))) {
      // Measured on another class of machine: not comparable with this session's points.
      const std::string measured_on = r.value("machine_class", "");
      if (!measured_on.empty() && measured_on != machine_class_) {
        other_class.insert(r.value("key", ""));
        if (other_difference.empty())
          other_difference = machine_class_difference(machine_class_, measured_on);
        continue;
      }
      PointResult p = point_from_journal(r);
      const auto had = finished_.find(p.key);
      if (had != finished_.end() && !(had->second.brief && !p.brief)) continue;
      search_->record(index_of_.at(p.key), p.brief,
                      p.status == PointStatus::kOk ? std::optional<double>(p.score) : std::nullopt);
      keep(std::move(p));
    } else if (kind == "head_to_head") {
      compared_[r.at("id").get<std::string>()] = head_to_head_from_journal(r);
    }
  }
  result_.resumed_points = result_.points.size();
  if (!other_class.empty())
    result_.notes.push_back(fmt::format(
        "{} point(s) of the journal were measured on another machine class ({}): measured again "
        "here, not ranked against this session's",
        other_class.size(), other_difference));

  prepare_references();
  prepare_packages();
  sweep();
  if (interrupted_)
    throw Interrupted(
        fmt::format("interrupted: {} point(s) of {} are in the journal '{}'; "
                    "continue with --resume {}",
                    finished_.size(), space_.points.size(), path, o_.out_dir));
  current_.clear();

  std::vector<double> overheads;
  for (const auto& p : result_.points)
    if (p.status != PointStatus::kFailed && !p.resumed) overheads.push_back(p.overhead_s);
  if (!overheads.empty()) {
    std::nth_element(overheads.begin(), overheads.begin() + overheads.size() / 2, overheads.end());
    result_.overhead_median_s = overheads[overheads.size() / 2];
  }

  phase_ = "confirming";
  report(phase_);
  confirm();
  keep_winner_artifacts();

  // One-knob changes from the baseline, as the sweep measured them (not paired).
  const PointResult* base = nullptr;
  for (const auto& p : result_.points)
    if (p.changes == 0 && p.status != PointStatus::kFailed) base = &p;
  if (base) {
    const ResolvedConfiguration rb = resolve(by_key_.at(base->key)->config, desc_.traits);
    for (const auto& p : result_.points) {
      if (p.changes != 1 || p.status == PointStatus::kFailed) continue;
      const ResolvedConfiguration rp = resolve(by_key_.at(p.key)->config, desc_.traits);
      for (const auto& k : rp.knobs) {
        if (!k.applicable || k.value == rb.value(k.name)) continue;
        SingleChange c{k.name, k.value, p.key, p.score / base->score, NAN, NAN};
        const PointMetrics &m = p.metrics, &mb = base->metrics;
        if (o_.objective.kind == ObjectiveKind::kThroughput) {
          c.low = m.throughput_low / mb.throughput_high;
          c.high = m.throughput_high / mb.throughput_low;
        } else if (o_.objective.kind == ObjectiveKind::kLatencyP50) {
          c.low = mb.latency_p50_low_ms / m.latency_p50_high_ms;
          c.high = mb.latency_p50_high_ms / m.latency_p50_low_ms;
        }
        result_.single_changes.push_back(c);
      }
    }
    std::sort(result_.single_changes.begin(), result_.single_changes.end(),
              [](const auto& x, const auto& y) { return x.ratio > y.ratio; });
  }
  result_.wall_s = elapsed();
  if (o_.budget_s > 0 && result_.wall_s > o_.budget_s)
    result_.notes.push_back(fmt::format(
        "the run took {:.1f} min, over the {:.0f} min budget: points and comparisons are not cut "
        "short once started",
        result_.wall_s / 60, o_.budget_s / 60));
  json summary = to_json(result_);
  summary["record"] = "summary";
  summary["session"] = session_;
  summary.erase("points");  // they are in the journal already
  journal_->append(summary);
  return result_;
}

TuneResult run_tune(const TuneOptions& options, TimeSource& time, const TuneProgress& progress,
                    const TuneInterrupt& interrupt) {
  Supervisor supervisor(options, time, progress, interrupt);
  return supervisor.run();
}

}  // namespace torchperf
