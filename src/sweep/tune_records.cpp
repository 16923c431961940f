#include "torchperf/sweep/tune_runner.h"

#include <cmath>
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

PointFailure PointFailure::ended(Ending ending) {
  PointFailure f;
  f.source = FailureSource::kEnded;
  f.ending = ending;
  return f;
}

PointFailure PointFailure::answered(const std::string& kind) {
  PointFailure f;
  f.source = FailureSource::kAnswered;
  f.error = error_kind_named(kind).value_or(ErrorKind::kRuntime);
  return f;
}

std::string PointFailure::name() const {
  switch (source) {
    case FailureSource::kNone: return "";
    case FailureSource::kReference: return "reference";
    case FailureSource::kPackage: return "package";
    case FailureSource::kEnded: return to_string(ending);
    case FailureSource::kAnswered: return name_of(error);
  }
  return "";
}

PointFailure PointFailure::named(const std::string& name) {
  PointFailure f;
  if (name.empty()) return f;
  if (name == "reference" || name == "package") {
    f.source = name == "reference" ? FailureSource::kReference : FailureSource::kPackage;
    return f;
  }
  try {
    return ended(ending_named(name));
  } catch (const std::invalid_argument&) {
    return answered(name);
  }
}

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

PointMetrics metrics_of(const Measurement& m) {
  // The journal writes a non-finite figure as null and reads it back as 0 (the rates) or NaN
  // (the intervals and the accuracy), as before the reply was typed.
  const auto finite_or_zero = [](double v) { return std::isfinite(v) ? v : 0.0; };
  PointMetrics p;
  p.throughput = finite_or_zero(m.throughput_samples_per_s);
  p.throughput_low = m.throughput_ci.low;
  p.throughput_high = m.throughput_ci.high;
  p.latency_p50_ms = finite_or_zero(m.latency_p50_ms);
  p.latency_p99_ms = finite_or_zero(m.latency_p99_ms);
  // A stream's call is a timed pass: its latency is the whole stream's, estimated.
  const double per_call = m.stream ? m.stream->pass_scale : 1.0;
  p.latency_p50_low_ms = m.samples.summary.median_ci.low * per_call * 1e-6;
  p.latency_p50_high_ms = m.samples.summary.median_ci.high * per_call * 1e-6;
  p.stopped_early = m.samples.stop == StopReason::kBehindLeader;
  p.batch = m.batch;
  p.peak_memory_bytes = m.peak_memory_bytes;
  if (m.stream) {
    p.tokens_per_s = m.stream->tokens_per_s;
    p.padding_share = m.stream->padding_share;
  }
  p.comparable = m.quality.comparable;
  p.cosine = m.quality.cosine;
  p.max_abs_error = m.quality.max_abs_error;
  p.max_rel_error = m.quality.max_rel_error;
  p.top1 = m.quality.top1_agreement;
  p.valid = m.valid;
  p.invalid_reason = m.invalid_reason;
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

void check_journal_records(const std::vector<json>& records, const std::string& path) {
  for (std::size_t i = 1; i < records.size(); ++i) {
    const json& r = records[i];
    std::string kind;
    try {
      if (!r.is_object() || !r.contains("record") || !r.at("record").is_string())
        throw std::invalid_argument("expected a JSON object with a \"record\" string");
      kind = r.at("record").get<std::string>();
      if (kind == "session" && !r.at("session").is_number_integer())
        throw std::invalid_argument("field 'session': expected integer, got " +
                                    r.at("session").dump());
      if (kind == "point") {
        if (!r.contains("key")) throw std::invalid_argument("field 'key' is missing");
        point_from_journal(r);
      }
      if (kind == "head_to_head") head_to_head_from_journal(r);
    } catch (const json::exception& e) {
      throw ResultsError("journal '" + path + "' line " + std::to_string(i + 1) + ": a damaged " +
                         (kind.empty() ? std::string("record") : kind + " record") + " (" +
                         compact_json_error(e.what()) + "): repair or remove that line");
    } catch (const std::invalid_argument& e) {
      throw ResultsError("journal '" + path + "' line " + std::to_string(i + 1) + ": a damaged " +
                         (kind.empty() ? std::string("record") : kind + " record") + " (" +
                         e.what() + "): repair or remove that line");
    }
  }
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
          {"estimated_full_s", r.plan.estimated_s},
          {"plan",
           {{"summary", r.plan.summary},
            {"points", r.plan.points},
            {"estimated_s", r.plan.estimated_s},
            {"budget_too_small", r.plan.budget_too_small},
            {"fits", r.plan.fits},
            {"budget_note", r.plan.budget_note}}},
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
          {"careful", r.careful},
          {"baseline", r.baseline},
          {"as_given", r.as_given},
          {"vs_as_given", r.vs_as_given ? to_json(*r.vs_as_given) : json(nullptr)},
          {"single_changes", singles},
          {"notes", r.notes},
          {"machine_load",
           r.machine_load.sampled
               ? json{{"before_cores", std::isfinite(r.machine_load.before_cores)
                                           ? json(r.machine_load.before_cores)
                                           : json(nullptr)},
                      {"during_median_cores", r.machine_load.during_median_cores},
                      {"during_max_cores", r.machine_load.during_max_cores},
                      {"busy", r.machine_load.busy},
                      {"usable_cores", r.machine_load.usable_cores},
                      {"free_cores", r.machine_load.free_cores},
                      {"set_aside", r.machine_load.set_aside}}
               : json(nullptr)},
          {"packages", packages}};
}

}  // namespace torchperf
