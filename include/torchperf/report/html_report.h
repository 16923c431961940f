// The HTML report: one self-contained page (the plotting libraries inline, no network) with the
// recommendations, the plots of vega_specs.h, the tables the text report has, and the code that
// applies the winner. When the plots are drawn the page writes a status (marks drawn per panel,
// errors seen) into #torchperf-status, which the browser test reads.
#pragma once

#include <string>
#include <vector>

#include "torchperf/analysis/run_analysis.h"
#include "torchperf/page/html_page.h"
#include "torchperf/report/analysis_text.h"
#include "torchperf/report/vega_specs.h"

namespace torchperf {

std::string render_html(const std::vector<RunAnalysis>& runs);


}  // namespace torchperf
