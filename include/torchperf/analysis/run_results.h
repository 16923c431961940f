// A tune run as report reads it back from its journal (OUT/results.jsonl): the experiment, the
// machine, the swept axes, every point (first record per key, as --resume counts them), the
// head-to-head comparisons and the last summary. Bad files are refused with a ResultsError.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/sweep/tune_runner.h"

namespace torchperf {

struct RunResults {
  std::string journal;  // the results file read
  std::string label;    // a short name for side-by-side reports: the run's directory name
  nlohmann::json experiment;   // the header's
  nlohmann::json environment;  // the last session's
  std::string model, inputs, objective, accuracy;
  std::string input_source;  // the input spec printed back, or "file:PATH" (session.workload)
  // Swept knobs in registry order with their values (from the last session's axes).
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  std::string origin;  // the point effects are measured from (resolved key); may be ""
  std::vector<PointResult> points;
  std::vector<HeadToHead> comparisons;
  std::optional<nlohmann::json> summary;  // the last completed session's
  std::size_t sessions = 0;
  std::optional<long> running_pid;  // a tune still writing the journal (its lock is held)
  std::vector<std::string> warnings;  // e.g. a cut-short last line, a sweep that did not complete
  // A torch.export program's AOTInductor packages, the last record of each: compile time is
  // reported apart from run time ("precision=fp32,max_autotune=0,device=cpu" -> the record).
  std::map<std::string, nlohmann::json> packages;
};

// The knobs of a resolved key ("threads=2,batch=8,…"), in its order.
std::vector<std::pair<std::string, std::string>> key_knobs(const std::string& key);
// One knob's value in a key; "n/a" when the key has none (the knob did not apply).
std::string knob_value(const std::string& key, const std::string& knob);

// Reads a run: a directory holding results.jsonl, or the file itself. Throws ResultsError for a
// missing, empty, damaged, foreign or other-schema file, naming the file and the line.
RunResults load_run(const std::string& path);

}  // namespace torchperf
