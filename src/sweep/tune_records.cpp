#include "torchperf/sweep/tune_runner.h"

#include <ctime>
#include <stdexcept>

#include "supervisor.h"
#include "torchperf/json_fields.h"
#include "torchperf/sweep/record_fields.h"
#include "torchperf/sweep/tune_options.h"

// The journal's records of a tune run (points, metrics, head-to-head comparisons, the header and
// the summary) and the helpers the supervisor names its files with.

namespace torchperf {

using nlohmann::json;

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

std::string to_string(PointStatus status) {
  switch (status) {
    case PointStatus::kOk:
      return "ok";
    case PointStatus::kGuarded:
      return "guarded";
    case PointStatus::kFailed:
      return "failed";
  }
  return "failed";
}

PointStatus point_status_from_string(const std::string& name) {
  for (PointStatus s : {PointStatus::kOk, PointStatus::kGuarded, PointStatus::kFailed})
    if (to_string(s) == name) return s;
  throw std::invalid_argument("unknown point status '" + name + "'");
}

json to_json(const PointMetrics& p) { return write_fields(point_metrics_fields(), p); }

PointMetrics point_metrics_from_journal(const json& j) {
  PointMetrics p;
  read_fields(point_metrics_fields(), j, p);
  return p;
}

json to_json(const PointResult& p) { return write_fields(point_fields(), p); }

json compile_part(const json& measurement) {
  if (!measurement.is_object() || !measurement.contains("compile")) return nullptr;
  return {{"compile", measurement.at("compile")}};
}

PointResult point_from_journal(const json& r) {
  PointResult p;
  read_fields(point_fields(), r, p);
  if (r.contains("measurement")) p.measurement = compile_part(r.at("measurement"));
  p.resumed = true;
  return p;
}

json to_json(const HeadToHead& h) {
  return {{"a", h.a},
          {"b", h.b},
          {"ratio", nullable(h.ratio)},
          {"ci", {nullable(h.low), nullable(h.high)}},
          {"rounds", h.rounds},
          {"verdict", to_string(h.verdict)},
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
  // A failed comparison had no verdict ("") in journals written before verdicts were an enum.
  const std::string verdict = r.at("verdict").get<std::string>();
  h.verdict = verdict.empty() ? Verdict::kUndetermined : verdict_from_string(verdict);
  h.failure = r.value("failure", "");
  return h;
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
                       {"bound", {nullable(c.low), nullable(c.high)}}});
  json packages = json::array();
  for (const auto& p : r.packages)
    packages.push_back({{"options", p.options},
                        {"path", p.path},
                        {"compile_s", p.compile_s},
                        {"cache_hit", p.cache_hit},
                        {"failure", p.failure}});
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
          {"search",
           {{"strategy", to_string(r.search)},
            {"spent", r.search_spent},
            {"brief_time_s", r.brief_time_s},
            {"brief_points", r.brief_points},
            {"brief_workers", r.brief_workers},
            {"full_points", r.full_points}}},
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
          {"as_given", r.as_given},
          {"vs_as_given", r.vs_as_given ? to_json(*r.vs_as_given) : json(nullptr)},
          {"single_changes", singles},
          {"notes", r.notes},
          {"packages", packages}};
}

}  // namespace torchperf
