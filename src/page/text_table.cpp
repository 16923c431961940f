#include "torchperf/page/text_table.h"

#include <algorithm>

#include <fmt/format.h>

namespace torchperf {

std::string percent(double share) { return fmt::format("{:.1f}%", 100.0 * share); }

std::string escape_md(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

std::string TextTable::render(TextFormat format, const std::string& indent) const {
  std::string out;
  if (format == TextFormat::kMarkdown) {
    const auto row = [&](const std::vector<std::string>& cells) {
      std::string line = "|";
      for (const auto& c : cells) line += " " + escape_md(c) + " |";
      return line + "\n";
    };
    out += row(header);
    out += "|";
    for (std::size_t i = 0; i < header.size(); ++i) out += " --- |";
    out += "\n";
    for (const auto& r : rows) out += row(r);
    return out;
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string l = indent;
    for (std::size_t i = 0; i < cells.size(); ++i)
      l += fmt::format("{:<{}}", cells[i], i + 1 < cells.size() ? width[i] + 2 : 0);
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  out += line(header);
  for (const auto& r : rows) out += line(r);
  return out;
}

}  // namespace torchperf
