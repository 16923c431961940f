#include "torchperf/sweep/tune_options.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "torchperf/error.h"
#include "torchperf/measure/memory_probe.h"
#include "torchperf/text.h"

namespace torchperf {
void validate(const TuneOptions& o) {
  validate(o.workload);
  if (o.workload.vs) throw UsageError("tune: --vs is for bench; tune compares for you");
  if (o.budget_s < 0) throw UsageError("--budget: expected a duration >= 0 (0: no limit)");
  if (o.point_timeout_s < 0)
    throw UsageError("--point-timeout: expected a duration >= 0 (0: the default)");
  if (o.memory_cap_bytes < 0) throw UsageError("--memory-cap: expected a size > 0");
  if (o.leaders < 1 || o.leaders > 10) throw UsageError("--leaders: expected 1 to 10");
  if (o.out_dir.empty()) throw UsageError("tune: expected an output directory (--out DIR)");
}

std::map<std::string, std::vector<std::string>> parse_space(const std::string& text) {
  std::map<std::string, std::vector<std::string>> space;
  if (trim(text).empty()) return space;
  for (const auto& part : split(text, ';')) {
    if (part.empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--space: expected KNOB=V1,V2;KNOB=… , got '" + part + "'");
    const std::string knob = trim(part.substr(0, eq));
    std::vector<std::string> values;
    for (const auto& v : split(part.substr(eq + 1), ','))
      if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end())
        values.push_back(v);
    if (values.empty()) throw UsageError("--space: knob '" + knob + "' has no values");
    if (space.count(knob)) throw UsageError("--space: knob '" + knob + "' is given twice");
    space[knob] = values;
  }
  return space;
}

std::string space_to_string(const std::map<std::string, std::vector<std::string>>& space) {
  std::string out;
  for (const auto& [knob, values] : space) {
    out += (out.empty() ? "" : ";") + knob + "=";
    for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + values[i];
  }
  return out;
}

double parse_duration(const std::string& text, const std::string& what) {
  const std::string t = trim(text);
  double total = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < t.size()) {
    char* end = nullptr;
    const double v = std::strtod(t.c_str() + i, &end);
    const std::size_t used = static_cast<std::size_t>(end - (t.c_str() + i));
    if (used == 0 || !std::isfinite(v) || v < 0) break;
    double unit = 1;
    if (i + used < t.size()) {
      const char u = t[i + used];
      if (u == 's')
        unit = 1;
      else if (u == 'm')
        unit = 60;
      else if (u == 'h')
        unit = 3600;
      else
        break;
      i += used + 1;
    } else if (any) {
      break;  // "1h30" is ambiguous
    } else {
      i += used;
    }
    total += v * unit;
    any = true;
  }
  if (!any || i != t.size())
    throw UsageError(what + ": expected a duration such as 90s, 20m, 1h30m or 0, got '" + text +
                     "'");
  return total;
}

std::int64_t parse_size(const std::string& text, const std::string& what) {
  const std::string t = trim(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  std::string unit = trim(end ? std::string(end) : "");
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (!unit.empty() && unit.back() == 'I') unit.pop_back();
  double scale = 1;
  if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (!unit.empty())
    scale = -1;
  if (t.empty() || end == t.c_str() || scale < 0 || !std::isfinite(v) || v <= 0)
    throw UsageError(what + ": expected a size such as 4G, 512M or a byte count, got '" + text +
                     "'");
  return static_cast<std::int64_t>(v * scale);
}

nlohmann::json experiment_json(const TuneOptions& o) {
  const BenchOptions& w = o.workload;
  nlohmann::json j = {{"model", w.model},
          {"input_spec", w.input_spec},
          {"inputs_file", w.inputs_file},
          {"device", w.device},
          {"seed", w.seed},
          {"time_s", w.time_s},
          {"target_relative_ci", w.target_relative_ci},
          {"space", o.space},
          {"objective", o.objective.to_string()},
          {"accuracy", o.guard.to_string()},
          {"order_seed", o.order_seed},
          {"leaders", o.leaders},
          {"search", to_string(o.search)}};
  // Only when given: a journal from before --as-given keeps its fingerprint.
  if (!o.as_given.empty()) j["as_given"] = o.as_given;
  if (!w.python_module.empty()) j["python_module"] = w.python_module;
  if (!w.dims.empty()) j["dims"] = w.dims;  // only when given, as above
  if (!w.calibration_file.empty()) j["calibration_file"] = w.calibration_file;
  return j;
}

void apply_experiment_json(const nlohmann::json& j, TuneOptions& o) {
  try {
    BenchOptions& w = o.workload;
    w.model = j.at("model").get<std::string>();
    w.input_spec = j.at("input_spec").get<std::string>();
    w.dims = j.value("dims", std::vector<std::string>{});
    w.inputs_file = j.at("inputs_file").get<std::string>();
    w.calibration_file = j.value("calibration_file", std::string());
    w.device = j.at("device").get<std::string>();
    w.seed = j.at("seed").get<std::uint64_t>();
    w.time_s = j.at("time_s").get<double>();
    w.target_relative_ci = j.at("target_relative_ci").get<double>();
    o.space = j.at("space").get<std::map<std::string, std::vector<std::string>>>();
    o.objective = Objective::parse(j.at("objective").get<std::string>());
    o.guard = AccuracyGuard::parse(j.at("accuracy").get<std::string>());
    o.order_seed = j.at("order_seed").get<std::uint64_t>();
    o.leaders = j.at("leaders").get<std::size_t>();
    // Journals from before the smart search swept the whole cube.
    o.search = search_kind_from_string(j.value("search", "exhaustive"));
    o.as_given = j.value("as_given", "");
    w.python_module = j.value("python_module", "");
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("journal header: the experiment's options are incomplete (") +
                     e.what() + ")");
  }
}

double effective_point_timeout_s(const TuneOptions& o) {
  if (o.point_timeout_s > 0) return o.point_timeout_s;
  // Warm-up and measurement take up to 2x time_s; the rest is load, setup and one slow call.
  return std::max(120.0, 10 * o.workload.time_s);
}

std::int64_t effective_memory_cap_bytes(const TuneOptions& o) {
  if (o.memory_cap_bytes > 0) return o.memory_cap_bytes;
  // A worker starts from nothing: the supervisor's own resident memory is not its to use.
  const std::int64_t available = available_memory_bytes();
  return available > 0 ? available / 10 * 9 : 0;
}

}  // namespace torchperf
