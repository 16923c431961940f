// Small text helpers every parser in torchperf shares (input specs, configurations, spaces,
// accuracy bounds): header-only, torch-free.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace torchperf {

// Without leading and trailing spaces and tabs.
inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// The trimmed pieces between separators; "" gives one empty piece, "a,,b" an empty middle one.
inline std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> pieces;
  std::size_t start = 0;
  while (true) {
    const auto at = text.find(separator, start);
    pieces.push_back(
        trim(text.substr(start, at == std::string::npos ? std::string::npos : at - start)));
    if (at == std::string::npos) return pieces;
    start = at + 1;
  }
}

// The text as a positive whole number, or nothing (signs, spaces, fractions and overflow included).
inline std::optional<long long> positive_whole_number(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  long long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value <= 0) return std::nullopt;
  return value;
}

}  // namespace torchperf
