// The report as text: for a terminal (aligned columns) or as Markdown (for a pull request). Both
// carry the same numbers as the HTML page: recommendations with evidence, main effects,
// interactions, Pareto fronts, the guarded and failed points, and how to apply the winner.
#pragma once

#include <string>
#include <vector>

#include "torchperf/analysis/run_analysis.h"

namespace torchperf {

enum class TextFormat { kTerminal, kMarkdown };

// One run, or several side by side (their effects in one table, a column per run).
std::string format_report(const std::vector<RunAnalysis>& runs, TextFormat format);

// A table with a header, rendered with aligned columns or as a Markdown table.
struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string render(TextFormat format, const std::string& indent = "  ") const;
};

// "helps", "hurts", "negligible (within 3%)", "no clear effect" or "too few pairs".
std::string verdict(const EffectEstimate& estimate);

// The tables the terminal, Markdown and HTML reports share; `times` is the ratio suffix.
TextTable main_effects_table(const RunAnalysis& analysis, const std::string& times);
TextTable interactions_table(const RunAnalysis& analysis, std::size_t rows, const std::string& times);

}  // namespace torchperf
