// Time as sets of disjoint spans (start and end in trace time, not the confidence intervals of
// measure/statistics.h): the arithmetic every breakdown of a trace is made of (union,
// clipping to a step, difference, intersection, length). Header-only and torch-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace torchperf {

struct TimeSpan {
  std::int64_t start = 0, end = 0;
  std::uint32_t first = 0;  // the event that opened it (unions made by merge_spans)
};

// Sorted, disjoint, non-empty intervals; their ends increase too.
using TimeSpans = std::vector<TimeSpan>;

// The union of possibly overlapping intervals; `first` keeps the earliest-starting event.
inline TimeSpans merge_spans(TimeSpans intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const TimeSpan& a, const TimeSpan& b) {
    return a.start < b.start || (a.start == b.start && a.end > b.end);
  });
  TimeSpans merged;
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

inline std::int64_t total_length(const TimeSpans& set) {
  std::int64_t sum = 0;
  for (const auto& i : set) sum += i.end - i.start;
  return sum;
}

// The part of `set` inside [start, end).
inline TimeSpans clip(const TimeSpans& set, std::int64_t start, std::int64_t end) {
  TimeSpans out;
  auto it = std::upper_bound(set.begin(), set.end(), start,
                             [](std::int64_t t, const TimeSpan& i) { return t < i.end; });
  for (; it != set.end() && it->start < end; ++it) {
    TimeSpan i = *it;
    i.start = std::max(i.start, start);
    i.end = std::min(i.end, end);
    if (i.end > i.start) out.push_back(i);
  }
  return out;
}

inline TimeSpans unite(const TimeSpans& a, const TimeSpans& b) {
  TimeSpans both;
  both.reserve(a.size() + b.size());
  both.insert(both.end(), a.begin(), a.end());
  both.insert(both.end(), b.begin(), b.end());
  return merge_spans(std::move(both));
}

// a minus b.
inline TimeSpans subtract(const TimeSpans& a, const TimeSpans& b) {
  TimeSpans out;
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

inline std::int64_t intersection_length(const TimeSpans& a, const TimeSpans& b) {
  return total_length(a) - total_length(subtract(a, b));
}

}  // namespace torchperf
