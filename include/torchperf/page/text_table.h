// A table with a header, for a terminal (aligned columns) or as Markdown: the one table every
// report prints (tune's, train's, lint's, trace's) and the HTML page renders. Torch-free, like the
// whole `page` part, so that `trace` links no LibTorch.
#pragma once

#include <string>
#include <vector>

namespace torchperf {

enum class TextFormat { kTerminal, kMarkdown };

struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string render(TextFormat format, const std::string& indent = "  ") const;
};

// A share in [0, 1] as a table cell: "12.3%".
std::string percent(double share);

// A cell's text made safe for a Markdown table (its '|' escaped).
std::string escape_md(const std::string& text);

}  // namespace torchperf
