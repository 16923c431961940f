// Time as sets of disjoint intervals: the arithmetic every breakdown of a trace is made of (union,
// clipping to a step, difference, intersection, length). Header-only and torch-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace torchperf {

struct Interval {
  std::int64_t start = 0, end = 0;
  std::uint32_t first = 0;  // the event that opened it (unions made by merge_intervals)
};

// Sorted, disjoint, non-empty intervals; their ends increase too.
using IntervalSet = std::vector<Interval>;

// The union of possibly overlapping intervals; `first` keeps the earliest-starting event.
inline IntervalSet merge_intervals(IntervalSet intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.start < b.start || (a.start == b.start && a.end > b.end);
  });
  IntervalSet merged;
  for (const auto& i : intervals) {
    if (i.end <= i.start) continue;
    if (!merged.empty() && i.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, i.end);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

inline std::int64_t total_length(const IntervalSet& set) {
  std::int64_t sum = 0;
  for (const auto& i : set) sum += i.end - i.start;
  return sum;
}

// The part of `set` inside [start, end).
inline IntervalSet clip(const IntervalSet& set, std::int64_t start, std::int64_t end) {
  IntervalSet out;
  auto it = std::upper_bound(set.begin(), set.end(), start,
                             [](std::int64_t t, const Interval& i) { return t < i.end; });
  for (; it != set.end() && it->start < end; ++it) {
    Interval i = *it;
    i.start = std::max(i.start, start);
    i.end = std::min(i.end, end);
    if (i.end > i.start) out.push_back(i);
  }
  return out;
}

inline IntervalSet unite(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet both;
  both.reserve(a.size() + b.size());
  both.insert(both.end(), a.begin(), a.end());
  both.insert(both.end(), b.begin(), b.end());
  return merge_intervals(std::move(both));
}

// a minus b.
inline IntervalSet subtract(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  std::size_t j = 0;
  for (const auto& i : a) {
    std::int64_t at = i.start;
    while (j < b.size() && b[j].end <= at) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].start < i.end) {
      if (b[k].start > at) out.push_back({at, b[k].start, i.first});
      at = std::max(at, b[k].end);
      ++k;
    }
    if (at < i.end) out.push_back({at, i.end, i.first});
  }
  return out;
}

inline std::int64_t intersection_length(const IntervalSet& a, const IntervalSet& b) {
  return total_length(a) - total_length(subtract(a, b));
}

}  // namespace torchperf
