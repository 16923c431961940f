// What a tune says it will do before its first point: how many points, at what cost each, what
// the budget fits, and what the cluster and the compiles add. Printed as the plan line and kept
// in `tune --json` as "plan", whose budget_too_small torchperf.tune reads.
#pragma once

#include <cstddef>
#include <string>

#include "torchperf/sweep/search.h"
#include "torchperf/sweep/tune_budget.h"
#include "torchperf/sweep/tune_runner.h"

namespace torchperf {

// A budget in words: "30 s" under two minutes, else "5 min".
std::string budget_words(double seconds);

struct PlanInputs {
  SearchKind search = SearchKind::kSmart;
  std::size_t total = 0;          // points of the space
  std::size_t finished = 0;       // already in the journal
  std::size_t origin_screen = 0;  // the origin and its one-knob changes
  std::size_t axes = 0;
  std::size_t finalists = 4;
  double full_time_s = 3;
  std::string starts;    // the guides' starts, each with its expected cost ("" when none)
  std::string compiles;  // Artefacts::plan_text()
  std::string machines;  // where the jobs run (a cluster), "" here
};

TunePlan make_plan(const PlanInputs& in, const TuneBudget& budget);

}  // namespace torchperf
