#include "torchperf/report/points_csv.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace torchperf {
namespace {

std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : ""; }

}  // namespace

std::string points_csv(const std::vector<RunAnalysis>& runs) {
  std::vector<std::string> knobs;  // the union of the runs' axes, first seen first
  for (const auto& a : runs)
    for (const auto& [knob, values] : a.run.axes)
      if (std::find(knobs.begin(), knobs.end(), knob) == knobs.end()) knobs.push_back(knob);
  std::string out = "run,model,key";
  for (const auto& k : knobs) out += "," + k;
  out += ",status,failure_kind,reason,changes,score,throughput_samples_per_s,throughput_ci_low,"
         "throughput_ci_high,latency_p50_ms,latency_p99_ms,peak_memory_bytes,cosine,"
         "max_abs_error,top1_agreement\n";
  for (const auto& a : runs) {
    for (const auto& p : a.run.points) {
      const auto values = key_knobs(p.key);
      std::string row = field(a.run.label) + "," + field(a.run.model) + "," + field(p.key);
      for (const auto& k : knobs) {
        std::string v;
        for (const auto& [name, value] : values)
          if (name == k) v = value;
        row += "," + field(v);
      }
      const bool has = p.status != PointStatus::kFailed;
      const PointMetrics& m = p.metrics;
      row += "," + field(to_string(p.status)) + "," + field(p.failure_kind) + "," + field(p.reason) + "," +
             std::to_string(p.changes) + "," + number(p.score);
      for (double v : {m.throughput, m.throughput_low, m.throughput_high, m.latency_p50_ms,
                       m.latency_p99_ms})
        row += "," + (has ? number(v) : std::string());
      row += "," + (has ? std::to_string(m.peak_memory_bytes) : std::string());  // exact bytes
      for (double v : {m.cosine, m.max_abs_error, m.top1 ? *m.top1 : NAN})
        row += "," + (has ? number(v) : std::string());
      out += row + "\n";
    }
  }
  return out;
}

}  // namespace torchperf
