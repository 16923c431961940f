// What a tune run says, worked out from its points: main effects and interactions (effects.h),
// Pareto fronts, recommendations in words each with its evidence, the knobs that did nothing,
// and the failed and guarded points. The report part renders it; it does no I/O itself.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/analysis/effects.h"
#include "torchperf/analysis/run_results.h"

namespace torchperf {

struct ParetoFront {
  // "throughput-p99", "throughput-memory", "throughput-accuracy", "throughput-compile"
  std::string name;
  std::string x_label;  // what is minimised along x
  std::vector<std::string> keys;  // the points on the front, by increasing x
};

struct Recommendation {
  // "winner", "runtime", "use", "conditional", "depends", "guarded", "avoid", "no-effect",
  // "unclear", "graph-breaks"
  std::string kind;
  std::string text;      // the advice, in words
  std::string evidence;  // the numbers behind it
};


struct RunAnalysis {
  RunResults run;
  Design design;
  std::vector<KnobEffects> effects;        // ranked, strongest first
  std::vector<Interaction> interactions;   // significant first
  std::vector<ParetoFront> fronts;
  std::vector<Recommendation> recommendations;
  std::vector<std::string> inert_knobs;    // every value's effect within kNegligibleRatio
  std::optional<std::string> winner;       // the run's confirmed winner (its summary)
  std::string winner_evidence;
  std::vector<std::size_t> measured, guarded, failed;  // indices into run.points
  // With more than one runtime measured: the best point of each, by its label ("C++ AOTInductor",
  // "Python torch.compile", … -> index into run.points).
  std::map<std::string, std::size_t> best_of_runtime;
};

// The best passing point of each runtime, by score; empty unless two runtimes have one.
std::map<std::string, std::size_t> best_of_each_runtime(const std::vector<PointResult>& points);
// "44.4 (95% CI 43.1-45.2)", or "44.4 (no interval: too few samples)" for a brief point.
std::string throughput_with_interval(const PointMetrics& m);
// A figure for people: 808,830 above a thousand, four significant digits below.
std::string human_number(double v);
// What a point's model cost to compile, in seconds: its AOTInductor package (paid once, whether
// or not this run found it in the cache) or torch.compile's first call; 0 for eager.
double compile_seconds(const PointResult& p);

// Needs no summary (an interrupted sweep is analysed too; it then has no confirmed winner).
RunAnalysis analyze(RunResults run);

// "1.171x (1.096-1.257, 16 pairs)"; "1.171x (1 pair, no interval)".
std::string describe_ratio(const EffectEstimate& e, const std::string& unit = "pair");
// "format=channels_last helps 1.30x with precision=bf16-autocast but 1.02x with fp32 (…)".
std::string describe_interaction(const Interaction& i);

nlohmann::json to_json(const EffectEstimate& e);
nlohmann::json to_json(const RunAnalysis& a);

}  // namespace torchperf
