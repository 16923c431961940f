// The HTML report: one self-contained page (the plotting libraries inline, no network) with the
// recommendations, the plots of vega_specs.h, the tables the text report has, and the code that
// applies the winner. When the plots are drawn the page writes a status (marks drawn per panel,
// errors seen) into #torchperf-status, which the browser test reads.
#pragma once

#include <string>
#include <vector>

#include "torchperf/analysis/run_analysis.h"
#include "torchperf/report/analysis_text.h"
#include "torchperf/report/vega_specs.h"

namespace torchperf {

std::string render_html(const std::vector<RunAnalysis>& runs);

// The page every HTML report shares (train's too): header, sections, plot panels, the driver.
struct HtmlPage {
  std::string title;
  std::vector<std::string> header_lines;
  std::string body_before_plots, body_after_plots;  // HTML, already escaped
  std::vector<Panel> panels;
};
std::string render_page(const HtmlPage& page);
std::string html_escape(const std::string& text);
std::string html_table(const TextTable& table);

}  // namespace torchperf
