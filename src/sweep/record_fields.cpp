#include "torchperf/sweep/record_fields.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "torchperf/json_fields.h"

namespace torchperf {
namespace {

using nlohmann::json;

std::string text_or(const json& v, const std::string& fallback) {
  return v.is_string() ? v.get<std::string>() : fallback;
}

template <typename T>
T number_or(const json& v, T fallback) {
  return v.is_number() ? v.get<T>() : fallback;
}

std::int64_t required_integer(const json& v, const char* name) {
  if (!v.is_number_integer()) throw std::invalid_argument(std::string(name) + ": not an integer");
  return v.get<std::int64_t>();
}

bool required_boolean(const json& v, const char* name) {
  if (!v.is_boolean()) throw std::invalid_argument(std::string(name) + ": not true or false");
  return v.get<bool>();
}

json interval(double low, double high) { return {nullable(low), nullable(high)}; }

void read_interval(const json& v, double& low, double& high) {
  low = v.is_array() && v.size() == 2 ? number_or_nan(v.at(0)) : NAN;
  high = v.is_array() && v.size() == 2 ? number_or_nan(v.at(1)) : NAN;
}

}  // namespace

std::string to_string(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "string";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kNumber:
      return "number";
    case FieldType::kNumberOrNull:
      return "number or null";
    case FieldType::kInterval:
      return "interval";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kObjectOrNull:
      return "object or null";
  }
  return "string";
}

bool holds_type(const json& value, FieldType type) {
  const auto number_or_null = [](const json& v) { return v.is_number() || v.is_null(); };
  switch (type) {
    case FieldType::kString:
      return value.is_string();
    case FieldType::kInteger:
      return value.is_number_integer();
    case FieldType::kNumber:
    case FieldType::kNumberOrNull:
      return number_or_null(value);
    case FieldType::kInterval:
      return value.is_array() && value.size() == 2 && number_or_null(value.at(0)) &&
             number_or_null(value.at(1));
    case FieldType::kBoolean:
      return value.is_boolean();
    case FieldType::kObjectOrNull:
      return value.is_object() || value.is_null();
  }
  return false;
}

const std::vector<RecordField<PointMetrics>>& point_metrics_fields() {
  using M = PointMetrics;
  static const std::vector<RecordField<M>> fields = {
      {"throughput_samples_per_s", FieldType::kNumberOrNull,
       "samples/s: batch / median per-call time",
       [](const M& m) { return nullable(m.throughput); },
       [](M& m, const json& v) { m.throughput = number_or_nan(v); }},
      {"throughput_ci", FieldType::kInterval, "samples/s, from the median's 95% CI",
       [](const M& m) { return interval(m.throughput_low, m.throughput_high); },
       [](M& m, const json& v) { read_interval(v, m.throughput_low, m.throughput_high); }},
      {"latency_p50_ms", FieldType::kNumberOrNull, "ms: the median per-call time",
       [](const M& m) { return nullable(m.latency_p50_ms); },
       [](M& m, const json& v) { m.latency_p50_ms = number_or_nan(v); }},
      {"latency_p50_ci_ms", FieldType::kInterval,
       "ms: the median's 95% CI (`iteration_ns.median_ci`)",
       [](const M& m) { return interval(m.latency_p50_low_ms, m.latency_p50_high_ms); },
       [](M& m, const json& v) { read_interval(v, m.latency_p50_low_ms, m.latency_p50_high_ms); }},
      {"latency_p99_ms", FieldType::kNumberOrNull,
       "ms: p99 of the per-call times (of block means, see bench)",
       [](const M& m) { return nullable(m.latency_p99_ms); },
       [](M& m, const json& v) { m.latency_p99_ms = number_or_nan(v); }},
      {"batch", FieldType::kInteger, "samples per forward call",
       [](const M& m) { return json(m.batch); },
       [](M& m, const json& v) { m.batch = required_integer(v, "batch"); }},
      {"peak_memory_bytes", FieldType::kInteger,
       "the measurement's `memory.peak_bytes`, in the worker process",
       [](const M& m) { return json(m.peak_memory_bytes); },
       [](M& m, const json& v) { m.peak_memory_bytes = required_integer(v, "peak_memory_bytes"); }},
      {"tokens_per_s", FieldType::kNumberOrNull,
       "useful tokens/s over a stream of lengths (`measurement.stream`); `null` without `--dim`",
       [](const M& m) { return nullable(m.tokens_per_s); },
       [](M& m, const json& v) { m.tokens_per_s = number_or_nan(v); }},
      {"padding_share", FieldType::kNumberOrNull,
       "the share of the stream's padded tokens that are padding; `null` without `--dim`",
       [](const M& m) { return nullable(m.padding_share); },
       [](M& m, const json& v) { m.padding_share = number_or_nan(v); }},
      {"stopped_early", FieldType::kBoolean,
       "the point stopped before its stopping rule: clearly behind the tune's leader so far "
       "(its time went to other points); absent in older journals",
       [](const M& m) { return json(m.stopped_early); },
       [](M& m, const json& v) { m.stopped_early = v.is_boolean() && v.get<bool>(); }},
      {"comparable", FieldType::kBoolean,
       "the output matches the reference in count and shapes",
       [](const M& m) { return json(m.comparable); },
       [](M& m, const json& v) { m.comparable = required_boolean(v, "comparable"); }},
      {"cosine", FieldType::kNumberOrNull,
       "cosine similarity with the reference; `null` with NaN/Inf",
       [](const M& m) { return nullable(m.cosine); },
       [](M& m, const json& v) { m.cosine = number_or_nan(v); }},
      {"max_abs_error", FieldType::kNumberOrNull, "max \\|output − reference\\|",
       [](const M& m) { return nullable(m.max_abs_error); },
       [](M& m, const json& v) { m.max_abs_error = number_or_nan(v); }},
      {"max_rel_error", FieldType::kNumberOrNull, "`max_abs_error` / max \\|reference\\|",
       [](const M& m) { return nullable(m.max_rel_error); },
       [](M& m, const json& v) { m.max_rel_error = number_or_nan(v); }},
      {"top1_agreement", FieldType::kNumberOrNull,
       "fraction of rows whose argmax agrees; `null` when none",
       [](const M& m) { return m.top1 ? json(*m.top1) : json(nullptr); },
       [](M& m, const json& v) {
         if (v.is_number()) m.top1 = v.get<double>();
       }},
      {"valid", FieldType::kBoolean, "false when the output or the reference has NaN/Inf",
       [](const M& m) { return json(m.valid); },
       [](M& m, const json& v) { m.valid = required_boolean(v, "valid"); }},
      {"invalid_reason", FieldType::kString, "why not valid; `\"\"` when valid",
       [](const M& m) { return json(m.invalid_reason); },
       [](M& m, const json& v) { m.invalid_reason = text_or(v, ""); }},
  };
  return fields;
}

const std::vector<RecordField<PointResult>>& point_fields() {
  using P = PointResult;
  static const std::vector<RecordField<P>> fields = {
      {"key", FieldType::kString,
       "the resolved configuration: the point's identity in the journal",
       [](const P& p) { return json(p.key); },
       [](P& p, const json& v) {
         if (!v.is_string()) throw std::invalid_argument("key: not a string");
         p.key = v.get<std::string>();
       }},
      {"status", FieldType::kString, "`\"ok\"`, `\"guarded\"` or `\"failed\"`",
       [](const P& p) { return json(to_string(p.status)); },
       [](P& p, const json& v) { p.status = point_status_from_string(text_or(v, "")); }},
      {"reason", FieldType::kString, "why guarded or failed; `\"\"` when ok",
       [](const P& p) { return json(p.reason); },
       [](P& p, const json& v) { p.reason = text_or(v, ""); }},
      {"failure_kind", FieldType::kString, "what failed, below; `\"\"` unless failed",
       [](const P& p) { return json(p.failure.name()); },
       [](P& p, const json& v) { p.failure = PointFailure::named(text_or(v, "")); }},
      {"changes", FieldType::kInteger,
       "applicable knobs that differ from the space's origin (0: the origin)",
       [](const P& p) { return json(p.changes); },
       [](P& p, const json& v) { p.changes = number_or(v, 0); }},
      {"score", FieldType::kNumber,
       "the objective, oriented so that higher is better; `0` when failed",
       [](const P& p) { return json(p.score); },
       [](P& p, const json& v) { p.score = number_or(v, 0.0); }},
      {"wall_s", FieldType::kNumber,
       "the worker's wall time, from fork to exit, s (for a point in a shared worker, from its "
       "request to its answer, plus the worker's start-up when it started one; on a cluster, the "
       "driver's, from its job's start to its answer); `0` when none was started",
       [](const P& p) { return json(p.wall_s); },
       [](P& p, const json& v) { p.wall_s = number_or(v, 0.0); }},
      {"overhead_s", FieldType::kNumber,
       "`wall_s` minus warm-up and timed phase, s, at least 0; `0` when failed",
       [](const P& p) { return json(p.overhead_s); },
       [](P& p, const json& v) { p.overhead_s = number_or(v, 0.0); }},
      {"stage", FieldType::kString,
       "why it was measured: `\"screen\"`, `\"explore\"`, `\"final\"` (smart search), "
       "`\"sweep\"` (exhaustive); `\"sweep\"` when absent",
       [](const P& p) { return json(to_string(p.stage)); },
       // Journals from before the smart search measured every point in full.
       [](P& p, const json& v) { p.stage = search_stage_from_string(text_or(v, "sweep")); }},
      {"brief", FieldType::kBoolean,
       "measured for the smart search's brief time, not the full `--time`; `false` when absent",
       [](const P& p) { return json(p.brief); },
       [](P& p, const json& v) { p.brief = v.is_boolean() && v.get<bool>(); }},
      {"time_s", FieldType::kNumber,
       "the point's measurement budget, s (warm-up capped at the same)",
       [](const P& p) { return json(p.time_s); },
       [](P& p, const json& v) { p.time_s = number_or(v, 0.0); }},
      {"shared_worker", FieldType::kBoolean,
       "measured in a worker shared by consecutive brief points of the same process state (the "
       "first of them started it; brief points only); `false` when absent",
       [](const P& p) { return json(p.shared_worker); },
       [](P& p, const json& v) { p.shared_worker = v.is_boolean() && v.get<bool>(); }},
      {"machine_class", FieldType::kString,
       "the class of machine it was measured on (CPU model, cores, ISA, GPU and driver, torch); "
       "points are ranked only against points of the same class; `\"\"` in journals from before",
       [](const P& p) { return json(p.machine_class); },
       [](P& p, const json& v) { p.machine_class = text_or(v, ""); }},
      {"node", FieldType::kString,
       "the cluster node that measured it (hostname, address, Ray node id); `\"\"` when measured "
       "where tune runs",
       [](const P& p) { return json(p.node); },
       [](P& p, const json& v) { p.node = text_or(v, ""); }},
      {"dispatch_s", FieldType::kNumber,
       "on a cluster, the wall time the cluster added to the point (the driver's wall less the "
       "node's), s; `0` when measured where tune runs",
       [](const P& p) { return json(p.dispatch_s); },
       [](P& p, const json& v) { p.dispatch_s = number_or(v, 0.0); }},
      {"node_lost", FieldType::kString,
       "on a cluster, why the node first given the point was lost (it was then measured on "
       "another); `\"\"` when none was",
       [](const P& p) { return json(p.node_lost); },
       [](P& p, const json& v) { p.node_lost = text_or(v, ""); }},
      {"metrics", FieldType::kObjectOrNull,
       "the numbers the point is ranked and guarded on, below; `null` when failed",
       [](const P& p) {
         return p.status == PointStatus::kFailed ? json(nullptr)
                                                 : write_fields(point_metrics_fields(), p.metrics);
       },
       [](P& p, const json& v) {
         if (v.is_object()) read_fields(point_metrics_fields(), v, p.metrics);
       }},
  };
  return fields;
}

std::vector<std::string> csv_columns(const char* name, FieldType type) {
  if (type == FieldType::kInterval)
    return {std::string(name) + "_low", std::string(name) + "_high"};
  return {name};
}

std::string csv_quoted(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::string> csv_cells(const json& value, FieldType type) {
  const auto cell = [](const json& v) -> std::string {
    if (v.is_string()) return csv_quoted(v.get<std::string>());
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer()) return v.dump();  // exact (bytes, counts)
    if (v.is_number()) {
      const double d = v.get<double>();
      return std::isfinite(d) ? fmt::format("{:.6g}", d) : "";
    }
    return "";  // null
  };
  if (type == FieldType::kInterval) {
    if (!value.is_array() || value.size() != 2) return {"", ""};
    return {cell(value.at(0)), cell(value.at(1))};
  }
  return {cell(value)};
}

}  // namespace torchperf
