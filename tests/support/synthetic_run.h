// Writes tune journals with known numbers, in the journal's real format (the sweep part's own
// record writers), so that report's estimators, renderers and CLI are tested on exact truths.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace torchperf::testing {

struct SyntheticPoint {
  std::map<std::string, std::string> knobs;  // e.g. {"threads","2"}
  double throughput = 100;
  std::string status = "ok";  // ok | guarded | failed
  double cosine = 0.99999;
  std::string reason;
  bool has_ci = true;  // false: too few samples for an interval (written as null)
};

struct SyntheticRun {
  std::string model = "builtin:mlp";
  std::string input_source = "784";
  std::string inputs = "Float[1,784]";
  std::string device = "cpu";
  std::vector<std::string> dims;  // the --dim distributions, as the experiment records them
  // Knob -> values, in registry order; the first value is the origin's.
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  std::vector<SyntheticPoint> points;
  std::string winner;  // a key; "" for no summary record
  nlohmann::json search;  // the summary's search object; null: none written
  std::vector<std::string> notes;  // the summary's notes
};

// Every combination of the axes, throughput = 100 * product of factor(knob, value) (and of
// interaction(k1, v1, k2, v2) for every pair of knobs).
std::vector<SyntheticPoint> full_factorial(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& axes,
    const std::function<double(const std::map<std::string, std::string>&)>& throughput);

// The resolved key of a point: knobs in the axes' order.
std::string synthetic_key(const SyntheticRun& run, const std::map<std::string, std::string>& knobs);

// Writes dir/results.jsonl; returns its path.
std::string write_synthetic_run(const std::string& dir, const SyntheticRun& run);

}  // namespace torchperf::testing
