#include "support/synthetic_run.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "torchperf/sweep/tune_runner.h"

namespace torchperf::testing {

using json = nlohmann::json;

std::vector<SyntheticPoint> full_factorial(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& axes,
    const std::function<double(const std::map<std::string, std::string>&)>& throughput) {
  std::vector<std::map<std::string, std::string>> combos = {{}};
  for (const auto& [knob, values] : axes) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& c : combos)
      for (const auto& v : values) {
        auto n = c;
        n[knob] = v;
        next.push_back(n);
      }
    combos = next;
  }
  std::vector<SyntheticPoint> points;
  for (const auto& c : combos) {
    SyntheticPoint p;
    p.knobs = c;
    p.throughput = throughput(c);
    points.push_back(p);
  }
  return points;
}

std::string synthetic_key(const SyntheticRun& run, const std::map<std::string, std::string>& knobs) {
  std::string key;
  for (const auto& [knob, values] : run.axes)
    if (knobs.count(knob)) key += (key.empty() ? "" : ",") + knob + "=" + knobs.at(knob);
  return key;
}

std::string write_synthetic_run(const std::string& dir, const SyntheticRun& run) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/results.jsonl";
  std::ofstream out(path, std::ios::trunc);
  json space = json::object();
  json axes = json::array();
  for (const auto& [knob, values] : run.axes) {
    std::string joined;
    for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
    axes.push_back(knob + "=" + joined);
    space[knob] = values;
  }
  json experiment = {{"model", run.model}, {"input_spec", run.input_source},
                     {"inputs_file", ""}, {"device", run.device}, {"seed", 0},
                     {"time_s", 1.0}, {"target_relative_ci", 0.01}, {"space", space},
                     {"objective", "throughput"}, {"accuracy", "cosine>=0.999"},
                     {"order_seed", 0}, {"leaders", 3}};
  if (!run.dims.empty()) experiment["dims"] = run.dims;
  out << json{{"record", "header"}, {"tool", "torchperf tune"}, {"schema_version", 1},
              {"created", "2026-01-01T00:00:00Z"}, {"fingerprint", "0000000000000000"},
              {"experiment", experiment}}
             .dump()
      << "\n";
  out << json{{"record", "session"}, {"session", 1}, {"started", "2026-01-01T00:00:01Z"},
              {"environment", {{"cpu_model", "Synthetic CPU"}, {"usable_cores", 2},
                               {"torch_version", "2.13.0"},
                               {"torch_build", {{"summary", "MKL 2024.2, oneDNN v3.12.0"}}}}},
              {"workload", {{"model", run.model}, {"inputs", run.inputs},
                            {"input_source", run.input_source}, {"traits", json::object()}}},
              {"space", {{"axes", axes}, {"points", run.points.size()},
                         {"combinations", run.points.size()}, {"dropped", json::array()}}},
              {"limits", {{"budget_s", 0}, {"point_timeout_s", 120}, {"memory_cap_bytes", 0}}}}
             .dump()
      << "\n";
  std::string origin;
  for (const auto& [knob, values] : run.axes)
    origin += (origin.empty() ? "" : ",") + knob + "=" + values.front();
  for (const auto& sp : run.points) {
    PointResult p;
    p.key = synthetic_key(run, sp.knobs);
    p.status = point_status_from_string(sp.status);
    p.reason = sp.reason;
    if (sp.status == "failed") p.failure = PointFailure::ended(Ending::kCrashed);
    for (const auto& [knob, values] : run.axes)
      if (sp.knobs.count(knob) && sp.knobs.at(knob) != values.front()) ++p.changes;
    p.metrics.throughput = sp.throughput;
    p.metrics.throughput_low = sp.has_ci ? sp.throughput * 0.98 : NAN;
    p.metrics.throughput_high = sp.has_ci ? sp.throughput * 1.02 : NAN;
    p.metrics.batch = sp.knobs.count("batch") ? std::stoll(sp.knobs.at("batch")) : 1;
    p.metrics.latency_p50_ms = 1000.0 * static_cast<double>(p.metrics.batch) / sp.throughput;
    p.metrics.latency_p99_ms = p.metrics.latency_p50_ms * 1.2;
    p.metrics.peak_memory_bytes = 100'000'000 + 1'000'000 * p.metrics.batch;
    p.metrics.cosine = sp.cosine;
    p.score = sp.status == "failed" ? 0 : sp.throughput;
    json record = to_json(p);
    record["record"] = "point";
    record["session"] = 1;
    record["configuration"] = p.key;
    record["measurement"] = nullptr;
    out << record.dump() << "\n";
  }
  if (!run.winner.empty()) {
    json summary = json{{"record", "summary"}, {"session", 1}, {"schema_version", 1}, {"kind", "tune"},
                {"winner", run.winner},
                {"winner_note", "its lead over the runners-up is significant head to head"},
                {"space", {{"origin", origin}}},
                {"vs_baseline", {{"a", run.winner}, {"b", origin}, {"ratio", 2.0},
                                 {"ci", {1.9, 2.1}}, {"rounds", 12}, {"verdict", "faster"},
                                 {"failure", ""}}},
                {"vs_careful", nullptr}};
    if (!run.search.is_null()) summary["search"] = run.search;
    summary["notes"] = run.notes;
    out << summary.dump() << "\n";
  }
  return path;
}

}  // namespace torchperf::testing
