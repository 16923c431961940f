// The report as text: for a terminal (aligned columns) or as Markdown (for a pull request). Both
// carry the same numbers as the HTML page: recommendations with evidence, main effects,
// interactions, Pareto fronts, the guarded and failed points, and how to apply the winner.
#pragma once

#include <string>
#include <vector>

#include "torchperf/analysis/run_analysis.h"
#include "torchperf/page/text_table.h"

namespace torchperf {

// One run, or several side by side (their effects in one table, a column per run).
std::string format_report(const std::vector<RunAnalysis>& runs, TextFormat format);

// "helps", "hurts", "negligible (within 3%)", "no clear effect" or "too few pairs".
std::string verdict(const EffectEstimate& estimate);

// The tables the terminal, Markdown and HTML reports share; `times` is the ratio suffix.
TextTable main_effects_table(const RunAnalysis& analysis, const std::string& times);
TextTable interactions_table(const RunAnalysis& analysis, std::size_t rows, const std::string& times);

}  // namespace torchperf
