#include "torchperf/serve/load_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "torchperf/error.h"
#include "torchperf/json_fields.h"
#include "torchperf/text.h"

namespace torchperf {
namespace {

std::string milliseconds(double seconds) { return fmt::format("{:.3g} ms", seconds * 1e3); }

std::string percentile_name(double quantile) { return "p" + fmt::format("{:g}", quantile * 100); }

ObjectiveVerdict judge(const LatencyObjective& objective, std::vector<double> latencies) {
  ObjectiveVerdict v;
  v.objective = objective;
  v.needed = samples_for_quantile_upper_bound(objective.quantile, kObjectiveConfidence);
  std::sort(latencies.begin(), latencies.end());
  v.upper_bound_s =
      quantile_upper_bound_sorted(latencies, objective.quantile, kObjectiveConfidence);
  const std::string p = percentile_name(objective.quantile);
  v.enough = latencies.size() >= v.needed;
  if (!v.enough) {
    v.reason =
        fmt::format("too few requests for a {} claim: {} of the {} needed at {:g}% confidence", p,
                    latencies.size(), v.needed, 100 * kObjectiveConfidence);
    return v;
  }
  v.valid = v.upper_bound_s <= objective.limit_s;
  const std::string bound = std::isfinite(v.upper_bound_s)
                                ? milliseconds(v.upper_bound_s)
                                : std::string("unbounded (failed requests)");
  v.reason =
      fmt::format("{} <= {} at {:g}% confidence: {} {}", p, bound, 100 * kObjectiveConfidence,
                  v.valid ? "within" : "over", milliseconds(objective.limit_s));
  return v;
}

// Lengths that vary: the objective must hold for the longest quarter too, whose requests wait
// longest and would hide in the whole's tail (issue 62). Judged as the whole is, failures
// included, and folded into the verdict.
void judge_longest_quarter(const LatencyObjective& objective,
                           const std::vector<RequestRecord>& records, LoadSummary& s) {
  const LengthLatency& longest = s.by_length.back();
  std::vector<double> judged;
  for (const auto& r : records)
    if (r.length >= longest.low)
      judged.push_back(r.outcome == RequestOutcome::kOk ? r.done_s - r.scheduled_s
                                                        : std::numeric_limits<double>::infinity());
  ObjectiveVerdict q = judge(objective, std::move(judged));
  ObjectiveVerdict& v = *s.verdict;
  v.longest_quarter = fmt::format("lengths {}-{}: {}", longest.low, longest.high, q.reason);
  v.longest_quarter_bound_s = q.upper_bound_s;
  v.enough = v.enough && q.enough;
  v.valid = v.valid && q.valid;
  v.reason += "; the longest quarter, " + v.longest_quarter;
}

}  // namespace

double parse_latency(const std::string& text, const std::string& what) {
  const std::string t = trim(text);
  char* end = nullptr;
  const double value = std::strtod(t.c_str(), &end);
  const std::string unit = end;
  double scale = 0;
  if (unit == "s") scale = 1;
  if (unit == "ms") scale = 1e-3;
  if (unit == "us") scale = 1e-6;
  if (end == t.c_str() || scale == 0 || !(std::isfinite(value) && value >= 0))
    throw UsageError(what + " '" + text + "': expected a time with a unit, e.g. 2ms, 500us, 0.1s");
  return value * scale;
}

LatencyObjective parse_latency_objective(const std::string& text) {
  const auto fail = [&]() -> LatencyObjective {
    throw UsageError("objective '" + text +
                     "': expected pQUANTILE=LATENCY with a unit, e.g. p99=50ms or p99.9=0.2s");
  };
  const std::string t = trim(text);
  const auto eq = t.find('=');
  if (t.size() < 4 || t[0] != 'p' || eq == std::string::npos) return fail();
  const std::string q = t.substr(1, eq - 1), limit = t.substr(eq + 1);
  char* end = nullptr;
  const double percent = std::strtod(q.c_str(), &end);
  if (q.empty() || *end != '\0' || !(percent > 0 && percent < 100)) return fail();
  double limit_s = 0;
  try {
    limit_s = parse_latency(limit, "objective '" + text + "'");
  } catch (const UsageError&) {
    return fail();
  }
  if (!(limit_s > 0)) return fail();
  return {percent / 100, limit_s, t};
}

std::string to_string(RequestOutcome outcome) {
  switch (outcome) {
    case RequestOutcome::kOk:
      return "ok";
    case RequestOutcome::kRejected:
      return "rejected (503)";
    case RequestOutcome::kClientError:
      return "client error (4xx)";
    case RequestOutcome::kServerError:
      return "server error (5xx)";
    case RequestOutcome::kTimeout:
      return "timeout";
    case RequestOutcome::kConnection:
      return "connection";
  }
  return "unknown";
}

// The answered requests in four groups by length (quartiles; fewer where lengths repeat), each
// with its median and p99 latency: a long request's wait is not hidden in the whole's figures.
std::vector<LengthLatency> latency_by_length(const std::vector<RequestRecord>& records) {
  std::vector<std::pair<std::int64_t, double>> answered;
  for (const auto& r : records)
    if (r.outcome == RequestOutcome::kOk && r.length > 0)
      answered.emplace_back(r.length, r.done_s - r.scheduled_s);
  if (answered.empty()) return {};
  std::sort(answered.begin(), answered.end());
  std::vector<LengthLatency> out;
  std::size_t from = 0;
  for (int q = 1; q <= 4 && from < answered.size(); ++q) {
    std::size_t to = std::max(from + 1, answered.size() * static_cast<std::size_t>(q) / 4);
    // A length is never split between two groups.
    while (to < answered.size() && answered[to].first == answered[to - 1].first) ++to;
    std::vector<double> latency;
    for (std::size_t i = from; i < to; ++i) latency.push_back(answered[i].second);
    std::sort(latency.begin(), latency.end());
    out.push_back({answered[from].first, answered[to - 1].first, latency.size(),
                   quantile_sorted(latency, 0.5), quantile_sorted(latency, 0.99)});
    from = to;
  }
  return out;
}

LoadSummary summarize_load(const std::vector<RequestRecord>& records, double duration_s,
                           const std::optional<LatencyObjective>& objective, double confidence) {
  if (!(duration_s > 0)) throw std::invalid_argument("summarize_load: duration must be positive");
  LoadSummary s;
  s.requests = records.size();
  s.duration_s = duration_s;
  s.offered_per_s = static_cast<double>(records.size()) / duration_s;
  std::vector<double> ok, judged, lags;
  for (const auto& r : records) {
    lags.push_back(r.sent_s - r.scheduled_s);
    if (r.outcome == RequestOutcome::kOk) {
      ok.push_back(r.done_s - r.scheduled_s);
      judged.push_back(ok.back());
    } else {
      ++s.errors[to_string(r.outcome)];
      if (!r.error.empty()) s.first_error.emplace(to_string(r.outcome), r.error);
      judged.push_back(std::numeric_limits<double>::infinity());
    }
  }
  s.ok = ok.size();
  s.throughput_per_s = static_cast<double>(ok.size()) / duration_s;
  if (!lags.empty()) {
    std::sort(lags.begin(), lags.end());
    s.max_send_lag_s = lags.back();
    s.median_send_lag_s = quantile_sorted(lags, 0.5);
  }
  std::sort(ok.begin(), ok.end());
  if (!ok.empty())
    for (const double q : {0.5, 0.9, 0.99, 0.999})
      s.latency.push_back(
          {q, quantile_sorted(ok, q), quantile_confidence_interval_sorted(ok, q, confidence)});
  s.by_length = latency_by_length(records);
  if (objective) {
    s.verdict = judge(*objective, std::move(judged));
    if (!s.by_length.empty()) judge_longest_quarter(*objective, records, s);
  }
  return s;
}

nlohmann::json to_json(const LoadSummary& s) {
  nlohmann::json j = {{"requests", s.requests},
                      {"ok", s.ok},
                      {"duration_s", s.duration_s},
                      {"offered_per_s", s.offered_per_s},
                      {"throughput_per_s", s.throughput_per_s},
                      {"errors", s.errors},
                      {"first_error", s.first_error},
                      {"median_send_lag_s", s.median_send_lag_s},
                      {"max_send_lag_s", s.max_send_lag_s},
                      {"latency_s", nlohmann::json::object()}};
  for (const auto& p : s.latency)
    j["latency_s"][percentile_name(p.quantile)] = {
        {"value", p.value_s}, {"ci", {nullable(p.ci.low), nullable(p.ci.high)}}};
  if (!s.by_length.empty()) {
    j["latency_by_length_s"] = nlohmann::json::array();
    for (const auto& l : s.by_length)
      j["latency_by_length_s"].push_back(
          {{"lengths", {l.low, l.high}}, {"ok", l.ok}, {"p50", l.p50_s}, {"p99", l.p99_s}});
  }
  if (s.verdict) {
    const ObjectiveVerdict& v = *s.verdict;
    j["objective"] = {{"text", v.objective.text},
                      {"quantile", v.objective.quantile},
                      {"limit_s", v.objective.limit_s},
                      {"enough", v.enough},
                      {"valid", v.valid},
                      {"upper_bound_s", nullable(v.upper_bound_s)},
                      {"needed", v.needed},
                      {"reason", v.reason}};
    if (!v.longest_quarter.empty())
      j["objective"]["longest_quarter"] = {{"reason", v.longest_quarter},
                                           {"upper_bound_s", nullable(v.longest_quarter_bound_s)}};
  }
  return j;
}

}  // namespace torchperf
