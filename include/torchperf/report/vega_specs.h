// The report's plots as Vega-Lite specifications, built with nlohmann::json, data inline: one
// throughput scatter per knob coloured by its values (as the guides draw them), the main-effect
// bars with their intervals, the interaction heatmap and the three Pareto plots; with several
// runs, each plot is faceted by run. Each panel says how many marks it must draw, so that a test
// (or a reader) can check that every point was plotted.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/analysis/run_analysis.h"
#include "torchperf/page/html_page.h"

namespace torchperf {

std::vector<Panel> report_panels(const std::vector<RunAnalysis>& runs);

}  // namespace torchperf
