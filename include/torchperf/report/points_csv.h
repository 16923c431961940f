// Every point of one or more runs as CSV (RFC 4180), one row per point, a column per swept knob:
// for a spreadsheet or a notebook.
#pragma once

#include <string>
#include <vector>

#include "torchperf/analysis/run_analysis.h"

namespace torchperf {

std::string points_csv(const std::vector<RunAnalysis>& runs);

}  // namespace torchperf
