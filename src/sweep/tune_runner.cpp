#include "torchperf/sweep/tune_runner.h"

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include "torchperf/bench/measurement_json.h"
#include "torchperf/error.h"
#include "torchperf/measure/environment.h"
#include "torchperf/sweep/journal.h"
#include "torchperf/sweep/space.h"
#include "torchperf/sweep/worker.h"
#include "torchperf/sweep/worker_process.h"
#include "torchperf/json_fields.h"

namespace torchperf {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string journal_file(const std::string& out_dir) { return out_dir + "/results.jsonl"; }

std::string fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return fmt::format("{:016x}", h);
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

double number_or(const json& j, const char* key, double fallback) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : fallback;
}

PointMetrics metrics_from(const json& m) {
  PointMetrics p;
  p.throughput = number_or(m, "throughput_samples_per_s", 0);
  const json& tci = m.at("throughput_ci");
  p.throughput_low = number_or_nan(tci.at(0));
  p.throughput_high = number_or_nan(tci.at(1));
  p.latency_p50_ms = number_or(m.at("latency_ms"), "p50", 0);
  p.latency_p99_ms = number_or(m.at("latency_ms"), "p99", 0);
  const json& mci = m.at("iteration_ns").at("median_ci");
  p.latency_p50_low_ms = number_or_nan(mci.at(0)) * 1e-6;
  p.latency_p50_high_ms = number_or_nan(mci.at(1)) * 1e-6;
  p.batch = m.at("batch").get<std::int64_t>();
  p.peak_memory_bytes = m.at("memory").at("peak_bytes").get<std::int64_t>();
  const json& q = m.at("quality");
  p.comparable = q.at("comparable").get<bool>();
  p.cosine = number_or(q, "cosine", NAN);
  p.max_abs_error = number_or(q, "max_abs_error", NAN);
  p.max_rel_error = number_or(q, "max_rel_error", NAN);
  if (q.at("top1_agreement").is_number()) p.top1 = q.at("top1_agreement").get<double>();
  p.valid = m.at("valid").get<bool>();
  p.invalid_reason = m.value("invalid_reason", "");
  return p;
}

}  // namespace

json to_json(const PointMetrics& p) {
  return {{"throughput_samples_per_s", nullable(p.throughput)},
          {"throughput_ci", {nullable(p.throughput_low), nullable(p.throughput_high)}},
          {"latency_p50_ms", nullable(p.latency_p50_ms)},
          {"latency_p50_ci_ms", {nullable(p.latency_p50_low_ms), nullable(p.latency_p50_high_ms)}},
          {"latency_p99_ms", nullable(p.latency_p99_ms)},
          {"batch", p.batch},
          {"peak_memory_bytes", p.peak_memory_bytes},
          {"comparable", p.comparable},
          {"cosine", nullable(p.cosine)},
          {"max_abs_error", nullable(p.max_abs_error)},
          {"max_rel_error", nullable(p.max_rel_error)},
          {"top1_agreement", p.top1 ? json(*p.top1) : json(nullptr)},
          {"valid", p.valid},
          {"invalid_reason", p.invalid_reason}};
}

PointMetrics point_metrics_from_journal(const json& j) {
  PointMetrics p;
  const auto get = [&](const char* k) { return number_or_nan(j.at(k)); };
  p.throughput = get("throughput_samples_per_s");
  const json& tci = j.at("throughput_ci");
  p.throughput_low = number_or_nan(tci.at(0));
  p.throughput_high = number_or_nan(tci.at(1));
  p.latency_p50_ms = get("latency_p50_ms");
  const json& lci = j.at("latency_p50_ci_ms");
  p.latency_p50_low_ms = number_or_nan(lci.at(0));
  p.latency_p50_high_ms = number_or_nan(lci.at(1));
  p.latency_p99_ms = get("latency_p99_ms");
  p.batch = j.at("batch").get<std::int64_t>();
  p.peak_memory_bytes = j.at("peak_memory_bytes").get<std::int64_t>();
  p.comparable = j.at("comparable").get<bool>();
  p.cosine = get("cosine");
  p.max_abs_error = get("max_abs_error");
  p.max_rel_error = get("max_rel_error");
  if (j.at("top1_agreement").is_number()) p.top1 = j.at("top1_agreement").get<double>();
  p.valid = j.at("valid").get<bool>();
  p.invalid_reason = j.value("invalid_reason", "");
  return p;
}

json to_json(const PointResult& p) {
  return {{"key", p.key},
          {"status", p.status},
          {"reason", p.reason},
          {"failure_kind", p.failure_kind},
          {"changes", p.changes},
          {"score", p.score},
          {"wall_s", p.wall_s},
          {"overhead_s", p.overhead_s},
          {"metrics", p.status == "failed" ? json(nullptr) : to_json(p.metrics)}};
}

PointResult point_from_journal(const json& r) {
  PointResult p;
  p.key = r.at("key").get<std::string>();
  p.status = r.at("status").get<std::string>();
  p.reason = r.value("reason", "");
  p.failure_kind = r.value("failure_kind", "");
  p.changes = r.value("changes", 0);
  p.score = r.value("score", 0.0);
  p.wall_s = r.value("wall_s", 0.0);
  p.overhead_s = r.value("overhead_s", 0.0);
  if (r.contains("metrics") && r.at("metrics").is_object())
    p.metrics = point_metrics_from_journal(r.at("metrics"));
  p.resumed = true;
  return p;
}

json to_json(const HeadToHead& h) {
  return {{"a", h.a},
          {"b", h.b},
          {"ratio", nullable(h.ratio)},
          {"ci", {nullable(h.low), nullable(h.high)}},
          {"rounds", h.rounds},
          {"verdict", h.verdict},
          {"failure", h.failure}};
}

HeadToHead head_to_head_from_journal(const json& r) {
  HeadToHead h;
  h.a = r.at("a").get<std::string>();
  h.b = r.at("b").get<std::string>();
  h.ratio = number_or_nan(r.at("ratio"));
  h.low = number_or_nan(r.at("ci").at(0));
  h.high = number_or_nan(r.at("ci").at(1));
  h.rounds = r.at("rounds").get<std::size_t>();
  h.verdict = r.at("verdict").get<std::string>();
  h.failure = r.value("failure", "");
  return h;
}

namespace {

[[noreturn]] void throw_worker_error(const json& error, const std::string& what) {
  const std::string kind = error.value("kind", "runtime");
  const std::string message = error.value("message", what + " failed");
  if (kind == "usage") throw UsageError(message);
  if (kind == "config") throw ConfigError(message);
  if (kind == "model") throw ModelError(message);
  if (kind == "workload") throw WorkloadError(message);
  throw RuntimeFailure(what + ": " + message);
}

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
  double elapsed() const { return to_seconds(time_.now() - start_); }
  WorkerOutcome launch(const json& request, const std::string& log_name, double timeout_s);
  json ask(const json& request, const std::string& log_name, const std::string& what);
  void prepare_references();
  PointResult run_point(const SpacePoint& point);
  HeadToHead compare(const std::string& a, const std::string& b, const std::string& why);
  void confirm();
  void report(const std::string& phase, double within_point = 0);
  double point_estimate_s() const;
  double confirmation_reserve_s() const;

  const TuneOptions& o_;
  TimeSource& time_;
  TuneProgress progress_;
  TuneInterrupt interrupt_;
  WorkerLimits limits_;
  Clock::time_point start_;
  std::optional<Journal> journal_;
  int session_ = 1;
  Space space_;
  WorkloadDescription desc_;
  std::map<std::string, std::string> references_;          // batch -> file
  std::map<std::string, std::string> reference_failures_;  // batch -> why
  std::map<std::string, PointResult> finished_;
  std::map<std::string, HeadToHead> compared_;
  std::map<std::string, const SpacePoint*> by_key_;
  TuneResult result_;
  std::size_t planned_ = 0, done_ = 0, failed_ = 0;
  std::vector<double> session_walls_;
  std::string current_;
  std::string phase_ = "preparing";
  bool interrupted_ = false;
};

WorkerOutcome Supervisor::launch(const json& request, const std::string& log_name,
                                 double timeout_s) {
  fs::create_directories(o_.out_dir + "/workers");
  WorkerLimits limits = limits_;
  limits.timeout_s = timeout_s;
  return run_worker_process(o_.worker_executable, request, limits,
                            o_.out_dir + "/workers/" + log_name + ".log", [&](double t) {
                              report(phase_, t);
                              if (interrupt_ && interrupt_()) {
                                interrupted_ = true;
                                return false;
                              }
                              return true;
                            });
}

// Runs a job whose failure is the run's failure (describe, reference).
json Supervisor::ask(const json& request, const std::string& log_name, const std::string& what) {
  const WorkerOutcome out = launch(request, log_name, limits_.timeout_s);
  if (interrupted_) throw Interrupted("interrupted while " + what);
  if (out.exit != WorkerExit::kAnswered)
    throw RuntimeFailure(what + ": the worker " + out.message + " (log: " + o_.out_dir +
                         "/workers/" + log_name + ".log)");
  if (!out.response.value("ok", false)) throw_worker_error(out.response.at("error"), what);
  return out.response;
}

double Supervisor::point_estimate_s() const {
  if (!session_walls_.empty()) {
    double sum = 0;
    for (double w : session_walls_) sum += w;
    return sum / static_cast<double>(session_walls_.size());
  }
  return 2 * o_.workload.time_s + 2.0;  // warm-up and measurement caps, plus start-up
}

double Supervisor::confirmation_reserve_s() const {
  // Leaders head to head, then the winner against baseline and careful: interleaved pairs, each
  // with twice the point time, plus start-up.
  // A slow point (a big batch, emulated bf16) makes a slow pair: at least two points' worth.
  const double pairs = static_cast<double>(o_.leaders - 1) + 2;
  return pairs * std::max(8 * o_.workload.time_s + 3.0, 2 * point_estimate_s());
}

void Supervisor::report(const std::string& phase, double within_point) {
  if (!progress_) return;
  TuneStatus s;
  s.phase = phase;
  s.done = done_;
  s.failed = failed_;
  s.planned = planned_;
  const double est = point_estimate_s();
  const double progress_points = static_cast<double>(done_) + std::min(0.95, within_point / est);
  s.fraction = planned_ ? progress_points / static_cast<double>(planned_) : 0;
  s.eta_s = std::max(0.0, static_cast<double>(planned_) - progress_points) * est +
            confirmation_reserve_s();
  const PointResult* best = nullptr;
  for (const auto& [key, p] : finished_)
    if (p.status == "ok" && (!best || p.score > best->score)) best = &p;
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
    json request = {
        {"job", "reference"}, {"workload", to_json(o_.workload)}, {"batch", batch}, {"path", path}};
    report("preparing");
    const WorkerOutcome out = launch(request, "reference-batch-" + label, limits_.timeout_s);
    if (interrupted_) throw Interrupted("interrupted while computing the references");
    if (out.exit == WorkerExit::kAnswered && out.response.value("ok", false)) {
      references_[batch] = path;
      journal_->append(
          {{"record", "reference"}, {"session", session_}, {"batch", batch}, {"path", path}});
      continue;
    }
    // The user's own mistakes stop the run; a batch too big for the machine only costs its points.
    if (out.exit == WorkerExit::kAnswered) {
      const json& e = out.response.at("error");
      const std::string kind = e.value("kind", "runtime");
      if (kind != "runtime" && kind != "out-of-memory")
        throw_worker_error(e, "the fp32 reference at batch " + batch);
      reference_failures_[batch] =
          "the fp32 reference at batch " + batch + " failed: " + e.value("message", "");
    } else {
      reference_failures_[batch] = "the fp32 reference at batch " + batch + " " + out.message;
    }
  }
  if (reference_failures_.size() == batches.size())
    throw RuntimeFailure(reference_failures_.begin()->second);
}

PointResult Supervisor::run_point(const SpacePoint& point) {
  PointResult r;
  r.key = point.key;
  r.changes = point.changes;
  const std::string batch = reference_batch(o_.workload, point.config);
  const auto ref_failure = reference_failures_.find(batch);
  if (ref_failure != reference_failures_.end()) {
    r.status = "failed";
    r.failure_kind = "reference";
    r.reason = ref_failure->second;
    return r;
  }
  json request = {{"job", "measure"},
                  {"workload", to_json(o_.workload)},
                  {"configuration", point.config.to_string()},
                  {"references", {{batch, references_.at(batch)}}}};
  const WorkerOutcome out =
      launch(request, fmt::format("point-{}", fnv1a(point.key).substr(0, 10)), limits_.timeout_s);
  r.wall_s = out.wall_s;
  if (interrupted_) return r;
  if (out.exit != WorkerExit::kAnswered) {
    r.status = "failed";
    r.failure_kind = to_string(out.exit);
    r.reason = out.message;
    return r;
  }
  if (!out.response.value("ok", false)) {
    r.status = "failed";
    r.failure_kind = out.response.at("error").value("kind", "runtime");
    r.reason = out.response.at("error").value("message", "");
    return r;
  }
  const json& m = out.response.at("result").at("measurement");
  r.measurement = m;
  r.metrics = metrics_from(m);
  r.score = objective_score(o_.objective, r.metrics);
  const double timed_s =
      number_or(m, "measured_s", 0) + number_or(m.at("warmup"), "total_ms", 0) / 1e3;
  r.overhead_s = std::max(0.0, out.wall_s - timed_s);
  if (auto why = o_.guard.check(r.metrics)) {
    r.status = "guarded";
    r.reason = *why;
  } else {
    r.status = "ok";
  }
  return r;
}

HeadToHead Supervisor::compare(const std::string& a, const std::string& b, const std::string& why) {
  Configuration ca = Configuration::parse(a), cb = Configuration::parse(b);
  HeadToHead h;
  h.a = resolve(ca, desc_.traits).to_string();
  h.b = resolve(cb, desc_.traits).to_string();
  // Keyed by the resolved pair: "the runner-up" and "the baseline" may be the same configuration.
  const std::string id = h.a + " | " + h.b;
  if (auto it = compared_.find(id); it != compared_.end()) return it->second;
  std::map<std::string, std::string> refs;
  for (const auto* c : {&ca, &cb}) {
    const std::string batch = reference_batch(o_.workload, *c);
    if (references_.count(batch)) refs[batch] = references_.at(batch);
  }
  BenchOptions w = o_.workload;
  // The pair shares one budget; a slow side (the baseline) needs room for enough rounds.
  w.time_s = 4 * o_.workload.time_s;
  json request = {{"job", "compare"},
                  {"workload", to_json(w)},
                  {"configuration", a},
                  {"vs", b},
                  {"references", refs}};
  current_ = why;
  const WorkerOutcome out =
      launch(request, "compare-" + fnv1a(id).substr(0, 10), limits_.timeout_s + 2 * w.time_s);
  if (interrupted_) throw Interrupted("interrupted while confirming the winner");
  if (out.exit != WorkerExit::kAnswered) {
    h.failure = out.message;
  } else if (!out.response.value("ok", false)) {
    h.failure = out.response.at("error").value("message", "");
  } else {
    const json& c = out.response.at("result").at("comparison");
    const json& s = c.at("speedup");
    h.ratio = number_or_nan(s.at("median"));
    h.low = number_or_nan(s.at("ci").at(0));
    h.high = number_or_nan(s.at("ci").at(1));
    h.rounds = s.at("rounds").get<std::size_t>();
    h.verdict = c.at("verdict").get<std::string>();
    // bench's ratio is in samples/s; for latency, compare per-call time at each side's batch.
    const double ba = c.at("a").at("batch").get<double>(), bb = c.at("b").at("batch").get<double>();
    if (!o_.objective.higher_is_better() && ba != bb) {
      const double scale = bb / ba;
      h.ratio *= scale;
      h.low *= scale;
      h.high *= scale;
      h.verdict = std::isnan(h.low) ? "undetermined"
                  : h.low > 1       ? "faster"
                  : h.high < 1      ? "slower"
                                    : "indistinguishable";
    }
  }
  json record = to_json(h);
  record["record"] = "head_to_head";
  record["id"] = id;
  record["why"] = why;
  record["session"] = session_;
  journal_->append(record);
  compared_[id] = h;
  return h;
}

void Supervisor::confirm() {
  std::vector<const PointResult*> ok;
  for (const auto& p : result_.points)
    if (p.status == "ok") ok.push_back(&p);
  std::sort(ok.begin(), ok.end(), [](auto* x, auto* y) { return x->score > y->score; });
  if (ok.empty()) {
    result_.winner_note = "no configuration finished and passed the accuracy guard";
    return;
  }
  const auto config_of = [&](const std::string& key) {
    return by_key_.at(key)->config.to_string();
  };
  // The leaders: the best, the runner-up (its lead is always checked head to head), and the
  // next ones whose sweep interval still reaches the best's: the top within their CIs.
  const auto interval = [&](const PointResult& p) -> std::pair<double, double> {
    const PointMetrics& m = p.metrics;
    if (o_.objective.kind == ObjectiveKind::kThroughput)
      return {m.throughput_low, m.throughput_high};
    if (o_.objective.kind == ObjectiveKind::kLatencyP50)
      return {1 / m.latency_p50_high_ms, 1 / m.latency_p50_low_ms};
    return {NAN, NAN};
  };
  const double best_low = interval(*ok.front()).first;
  result_.leaders.push_back(ok.front()->key);
  for (std::size_t i = 1; i < ok.size() && result_.leaders.size() < o_.leaders; ++i) {
    const double high = interval(*ok[i]).second;
    const bool overlaps = !std::isfinite(high) || !std::isfinite(best_low) || high >= best_low;
    if (i == 1 || overlaps) result_.leaders.push_back(ok[i]->key);
  }
  if (result_.leaders.size() > 1)
    for (std::size_t i = 1; i < result_.leaders.size(); ++i)
      result_.confirmation.push_back(compare(config_of(result_.leaders.front()),
                                             config_of(result_.leaders[i]),
                                             "confirming leader " + std::to_string(i + 1)));
  std::map<std::string, const PointResult*> point_of;
  for (const auto* p : ok) point_of[p->key] = p;
  const WinnerDecision d = decide_winner(
      result_.leaders, result_.confirmation,
      [&](const std::string& key) {
        return by_key_.count(key) ? by_key_.at(key)->changes : 1 << 20;
      },
      [&](const std::string& key) {
        const auto it = point_of.find(key);
        return it == point_of.end() ? 0.0 : it->second->metrics.cosine;
      });
  std::string winner = d.winner;
  result_.tie = d.tie;
  result_.tied = d.tied;
  result_.winner_note = result_.leaders.size() == 1 && ok.size() > 1
                            ? "--leaders 1: not confirmed head to head"
                            : d.note;
  result_.winner = winner;
  const std::string batch = reference_batch(o_.workload, by_key_.at(winner)->config);
  const std::string b = batch == "n/a" ? "" : batch;
  const auto against = [&](const Configuration& other,
                           const std::string& name) -> std::optional<HeadToHead> {
    if (resolve(other, desc_.traits).to_string() == winner) return std::nullopt;
    return compare(config_of(winner), other.to_string(), "winner vs " + name);
  };
  result_.vs_baseline = against(baseline_at(b), "baseline");
  result_.vs_careful = against(careful_at(desc_.traits, b), "careful");
}

TuneResult Supervisor::run() {
  validate(o_);
  if (o_.worker_executable.empty()) throw UsageError("tune: no worker executable given");
  const std::string path = journal_file(o_.out_dir);
  result_.journal_path = path;
  result_.objective = o_.objective;
  result_.guard = o_.guard;
  const json header = journal_header(o_);
  if (o_.resume) {
    // Refused before the file is touched (a cut-short line is trimmed only in our own journal).
    journal_.emplace(Journal::reopen(path, [&](const json& their_header) {
      const json& theirs = their_header.at("experiment");
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
    for (const auto& r : journal_->records())
      if (r.value("record", "") == "session")
        session_ = std::max(session_, r.value("session", 0) + 1);
  } else {
    Journal::refuse_existing(path);  // before the model is loaded
  }

  report("preparing");
  const json described = ask({{"job", "describe"}, {"workload", to_json(o_.workload)}}, "describe",
                             "loading model '" + o_.workload.model + "'");
  desc_ = workload_description_from_json(described.at("description"));
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
  for (const auto& p : space_.points) by_key_[p.key] = &p;
  result_.space_points = space_.points.size();
  result_.space_combinations = space_.combinations;
  result_.space_dropped = space_.dropped;
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
                    {"environment", to_json(capture_environment())},
                    {"workload", described.at("description")},
                    {"space",
                     {{"axes", result_.axes},
                      {"points", space_.points.size()},
                      {"combinations", space_.combinations},
                      {"dropped", space_.dropped}}},
                    {"limits",
                     {{"budget_s", o_.budget_s},
                      {"point_timeout_s", limits_.timeout_s},
                      {"memory_cap_bytes", limits_.memory_cap_bytes}}}});

  // What earlier sessions finished is kept and not run again (a key appears once).
  for (const auto& r : journal_->records()) {
    const std::string kind = r.value("record", "");
    if (kind == "point" && by_key_.count(r.value("key", "")) && !finished_.count(r.at("key"))) {
      PointResult p = point_from_journal(r);
      finished_[p.key] = p;
      result_.points.push_back(p);
    } else if (kind == "head_to_head") {
      compared_[r.at("id").get<std::string>()] = head_to_head_from_journal(r);
    }
  }
  result_.resumed_points = result_.points.size();

  prepare_references();

  phase_ = "sweeping";
  std::vector<const SpacePoint*> pending;
  for (std::size_t i : informative_order(space_, o_.order_seed))
    if (!finished_.count(space_.points[i].key)) pending.push_back(&space_.points[i]);
  const double estimate = static_cast<double>(pending.size()) * point_estimate_s();
  result_.estimated_full_s = estimate + confirmation_reserve_s();
  planned_ = pending.size();
  std::string plan = fmt::format(
      "{} point(s) to run ({} of {} already in the journal), about {:.1f} min at ~{:.1f} s a "
      "point, then the leaders head to head",
      pending.size(), finished_.size(), space_.points.size(), result_.estimated_full_s / 60,
      point_estimate_s());
  if (o_.budget_s > 0 && result_.estimated_full_s > o_.budget_s) {
    const double room = std::max(0.0, o_.budget_s - confirmation_reserve_s() - elapsed());
    planned_ =
        std::min(pending.size(), static_cast<std::size_t>(std::floor(room / point_estimate_s())));
    result_.notes.push_back(fmt::format(
        "the {} points to run need about {:.0f} min (at ~{:.1f} s a point, plus {:.0f} s to "
        "confirm the winner); the budget of {:.0f} min fits about {}: the baseline and the "
        "single-knob changes run first, then the rest in random order",
        pending.size(), result_.estimated_full_s / 60, point_estimate_s(), confirmation_reserve_s(),
        o_.budget_s / 60, planned_));
    plan = result_.notes.back();
  }
  if (progress_) {
    TuneStatus s;
    s.phase = "plan";
    s.message = plan;
    s.planned = planned_;
    progress_(s);
  }

  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (interrupt_ && interrupt_()) interrupted_ = true;
    if (interrupted_) break;
    if (o_.budget_s > 0 &&
        elapsed() + point_estimate_s() + confirmation_reserve_s() > o_.budget_s) {
      result_.budget_exhausted = true;
      result_.not_run = pending.size() - i;
      break;
    }
    current_ = pending[i]->key;
    PointResult p = run_point(*pending[i]);
    if (interrupted_) break;
    session_walls_.push_back(p.wall_s);
    json record = to_json(p);
    record["record"] = "point";
    record["session"] = session_;
    record["configuration"] = pending[i]->config.to_string();
    record["measurement"] = p.measurement;
    p.measurement = nullptr;  // kept in the journal, not twice in memory
    journal_->append(record);
    ++done_;
    if (p.status != "ok") ++failed_;
    planned_ = std::max(planned_, done_);
    finished_[p.key] = p;
    result_.points.push_back(p);
    report(phase_);
  }
  if (interrupted_)
    throw Interrupted(
        fmt::format("interrupted: {} point(s) of {} are in the journal '{}'; "
                    "continue with --resume {}",
                    finished_.size(), space_.points.size(), path, o_.out_dir));
  current_.clear();

  std::vector<double> overheads;
  for (const auto& p : result_.points)
    if (p.status != "failed" && !p.resumed) overheads.push_back(p.overhead_s);
  if (!overheads.empty()) {
    std::nth_element(overheads.begin(), overheads.begin() + overheads.size() / 2, overheads.end());
    result_.overhead_median_s = overheads[overheads.size() / 2];
  }

  phase_ = "confirming";
  report(phase_);
  confirm();

  // One-knob changes from the baseline, as the sweep measured them (not paired).
  const PointResult* base = nullptr;
  for (const auto& p : result_.points)
    if (p.changes == 0 && p.status != "failed") base = &p;
  if (base) {
    const ResolvedConfiguration rb = resolve(by_key_.at(base->key)->config, desc_.traits);
    for (const auto& p : result_.points) {
      if (p.changes != 1 || p.status == "failed") continue;
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

}  // namespace

WinnerDecision decide_winner(const std::vector<std::string>& leaders,
                             const std::vector<HeadToHead>& confirmation,
                             const std::function<int(const std::string&)>& changes,
                             const std::function<double(const std::string&)>& cosine) {
  WinnerDecision d;
  if (leaders.empty()) {
    d.note = "no configuration finished and passed the accuracy guard";
    return d;
  }
  d.winner = leaders.front();
  if (leaders.size() == 1) {
    d.note = "only one configuration passed: not confirmed head to head";
    return d;
  }
  std::vector<std::string> tied = {leaders.front()};
  const HeadToHead* reversal = nullptr;
  std::size_t answered = 0;
  for (const auto& h : confirmation) {
    if (!h.failure.empty()) continue;
    ++answered;
    if (h.verdict == "slower" && (!reversal || h.ratio < reversal->ratio)) reversal = &h;
    if (h.verdict == "indistinguishable" || h.verdict == "undetermined") tied.push_back(h.b);
  }
  if (answered == 0) {
    d.note = "the head-to-head re-measurements failed: the sweep's leader is named, unconfirmed";
  } else if (reversal) {
    d.winner = reversal->b;
    d.note = fmt::format(
        "head to head, it beat the sweep's leader {} ({:.3f}x): the sweep's order was noise",
        leaders.front(), 1 / reversal->ratio);
  } else if (tied.size() > 1) {
    d.tie = true;
    d.tied = tied;
    // Among the tied, the simplest (fewest changes from the origin), then the closest to the
    // reference output, then the sweep's order.
    d.winner = *std::min_element(tied.begin(), tied.end(), [&](const auto& x, const auto& y) {
      if (changes(x) != changes(y)) return changes(x) < changes(y);
      return cosine(x) > cosine(y);
    });
    d.note = fmt::format(
        "{} leaders are indistinguishable head to head; the simplest is named (fewest changes, "
        "then closest to the fp32 output)",
        tied.size());
  } else {
    d.note = "its lead over the runners-up is significant head to head";
  }
  return d;
}

json journal_header(const TuneOptions& options) {
  const json experiment = experiment_json(options);
  return {{"record", "header"},
          {"tool", "torchperf tune"},
          {"schema_version", kJournalSchemaVersion},
          {"created", now_iso8601()},
          {"fingerprint", fnv1a(experiment.dump())},
          {"experiment", experiment}};
}

json journal_experiment(const std::string& out_dir) {
  const auto records = Journal::read(journal_file(out_dir));
  return records.front().at("experiment");
}

TuneResult run_tune(const TuneOptions& options, TimeSource& time, const TuneProgress& progress,
                    const TuneInterrupt& interrupt) {
  Supervisor supervisor(options, time, progress, interrupt);
  return supervisor.run();
}

json to_json(const TuneResult& r) {
  json points = json::array();
  for (const auto& p : r.points) points.push_back(to_json(p));
  json confirmation = json::array();
  for (const auto& h : r.confirmation) confirmation.push_back(to_json(h));
  json singles = json::array();
  for (const auto& c : r.single_changes)
    singles.push_back({{"knob", c.knob},
                       {"value", c.value},
                       {"key", c.key},
                       {"ratio", c.ratio},
                       {"ci", {nullable(c.low), nullable(c.high)}}});
  return {{"schema_version", kJournalSchemaVersion},
          {"kind", "tune"},
          {"journal", r.journal_path},
          {"model", r.workload.model},
          {"inputs", r.workload.inputs},
          {"objective", r.objective.to_string()},
          {"accuracy", r.guard.to_string()},
          {"space",
           {{"axes", r.axes},
            {"origin", r.origin},
            {"points", r.space_points},
            {"combinations", r.space_combinations},
            {"dropped", r.space_dropped}}},
          {"points", points},
          {"not_run", r.not_run},
          {"budget_exhausted", r.budget_exhausted},
          {"estimated_full_s", r.estimated_full_s},
          {"wall_s", r.wall_s},
          {"overhead_median_s", r.overhead_median_s},
          {"resumed_points", r.resumed_points},
          {"truncated_lines_ignored", r.truncated_lines},
          {"leaders", r.leaders},
          {"confirmation", confirmation},
          {"winner", r.winner ? json(*r.winner) : json(nullptr)},
          {"tie", r.tie},
          {"tied", r.tied},
          {"winner_note", r.winner_note},
          {"vs_baseline", r.vs_baseline ? to_json(*r.vs_baseline) : json(nullptr)},
          {"vs_careful", r.vs_careful ? to_json(*r.vs_careful) : json(nullptr)},
          {"single_changes", singles},
          {"notes", r.notes}};
}

}  // namespace torchperf
