// What tune optimises and what it refuses: the objective that ranks configurations, and the
// accuracy guard a configuration's output must pass against the fp32 reference to be crowned.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace torchperf {

struct OutputQuality;

enum class ObjectiveKind { kThroughput, kLatencyP50, kLatencyP99 };

struct Objective {
  ObjectiveKind kind = ObjectiveKind::kThroughput;

  // "throughput", "latency" (= latency-p50), "latency-p50", "latency-p99"; UsageError otherwise.
  static Objective parse(const std::string& text);
  std::string to_string() const;
  std::string unit() const;  // "samples/s" or "ms"
  bool higher_is_better() const { return kind == ObjectiveKind::kThroughput; }
};

// The numbers tune ranks and guards a point on, taken from its measurement.
struct PointMetrics {
  double throughput = 0, throughput_low = 0, throughput_high = 0;  // samples/s and its 95% CI
  double latency_p50_ms = 0, latency_p99_ms = 0;
  double latency_p50_low_ms = 0, latency_p50_high_ms = 0;  // the median's CI
  std::int64_t batch = 1;
  std::int64_t peak_memory_bytes = 0;
  // A stream of varying lengths (issue 52): useful tokens/s and the padding's share; NaN without.
  double tokens_per_s = std::numeric_limits<double>::quiet_NaN();
  double padding_share = std::numeric_limits<double>::quiet_NaN();
  bool stopped_early = false;  // clearly behind the leader: stopped before its stopping rule
  bool comparable = true;
  double cosine = 1, max_abs_error = 0, max_rel_error = 0;
  std::optional<double> top1;  // fraction of rows whose argmax agrees
  bool valid = true;
  std::string invalid_reason;
};

// The guarded numbers of an output's quality against the reference (no timing).
PointMetrics quality_metrics(const OutputQuality& quality);

// The objective's value (samples/s or ms) and a score where higher is always better.
double objective_value(const Objective& objective, const PointMetrics& m);
double objective_score(const Objective& objective, const PointMetrics& m);

struct AccuracyBound {
  std::string metric;  // cosine | top1 | max_abs | max_rel
  bool at_least = true;
  double threshold = 0;
};

struct AccuracyGuard {
  std::vector<AccuracyBound> bounds;

  // "cosine>=0.999,top1>=99%" ("top1>=0.99" too); "none" for no guard; UsageError otherwise.
  static AccuracyGuard parse(const std::string& text);
  // cosine >= 0.999, max_rel <= 10% (the scale cosine cannot see) and, where outputs are logits
  // (a top-1 exists), top1 >= 99%.
  static AccuracyGuard default_guard();
  std::string to_string() const;
  // Why a point fails the guard (NaN/Inf, not comparable, a bound), or nothing when it passes.
  std::optional<std::string> check(const PointMetrics& m) const;
};

}  // namespace torchperf
