// The page every HTML report shares (tune's, train's, lint's, trace's, serve-tune's): one
// self-contained file with the plotting libraries inline (no network), a header, sections of
// tables, and plot panels (Vega-Lite). When the plots are drawn the page writes a status (marks
// drawn per panel, errors seen) into #torchperf-status, which the browser tests read. Torch-free.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torchperf/page/text_table.h"

namespace torchperf {

struct Panel {
  std::string id;       // the HTML element id, e.g. "scatter-threads"
  std::string title;
  std::string caption;  // one sentence on how to read it
  nlohmann::json spec;  // Vega-Lite
  std::map<std::string, int> expected_marks;  // Vega mark type ("symbol", "rect") -> items
};

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
