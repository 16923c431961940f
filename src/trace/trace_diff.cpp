#include "torchperf/trace/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

namespace torchperf {

const char* change_name(Change change) {
  switch (change) {
    case Change::kAdded:
      return "added";
    case Change::kRemoved:
      return "removed";
    case Change::kSlower:
      return "slower";
    case Change::kFaster:
      return "faster";
    case Change::kSame:
      return "same";
  }
  return "?";
}

namespace {

struct Side {
  double time = 0, calls = 0;
  std::string kind;
  bool present = false;
};

Change classify(const Side& a, const Side& b) {
  if (!a.present) return Change::kAdded;
  if (!b.present) return Change::kRemoved;
  const double delta = b.time - a.time;
  const double scale = std::max(a.time, b.time);
  if (std::fabs(delta) < kDiffFloorNs || std::fabs(delta) < kDiffThreshold * scale)
    return Change::kSame;
  return delta > 0 ? Change::kSlower : Change::kFaster;
}

std::vector<DiffRow> compare(const std::map<std::string, std::pair<Side, Side>>& by_name) {
  std::vector<DiffRow> rows;
  for (const auto& [name, sides] : by_name) {
    DiffRow row;
    row.name = name;
    row.kind = sides.first.present ? sides.first.kind : sides.second.kind;
    row.before = sides.first.time;
    row.after = sides.second.time;
    row.calls_before = sides.first.calls;
    row.calls_after = sides.second.calls;
    row.change = classify(sides.first, sides.second);
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const DiffRow& a, const DiffRow& b) {
    const bool sa = a.change == Change::kSame, sb = b.change == Change::kSame;
    if (sa != sb) return sb;
    if (std::fabs(a.delta()) != std::fabs(b.delta()))
      return std::fabs(a.delta()) > std::fabs(b.delta());
    return a.name < b.name;
  });
  return rows;
}

double steps_of(const TraceOverview& o) {
  return std::max<double>(1, static_cast<double>(o.steps.size()));
}

// Per name, a side's time and calls per step; `first` picks the before or the after side.
template <typename Row, typename Fields>
void add_rows(std::map<std::string, std::pair<Side, Side>>& by_name, const std::vector<Row>& rows,
              bool first, double steps, Fields fields) {
  for (const Row& r : rows) {
    auto& sides = by_name[r.name];
    Side& s = first ? sides.first : sides.second;
    const auto [kind, time, calls] = fields(r);
    s.present = true;
    s.kind = kind;
    s.time += time / steps;
    s.calls += static_cast<double>(calls) / steps;
  }
}

}  // namespace

TraceDiff diff_traces(const TraceAnalysis& before, const TraceAnalysis& after) {
  TraceDiff diff;
  diff.before = before.info.path;
  diff.after = after.info.path;
  diff.step_before = before.overview.average;
  diff.step_after = after.overview.average;
  diff.steps_before = before.overview.steps.size();
  diff.steps_after = after.overview.steps.size();
  const double na = steps_of(before.overview), nb = steps_of(after.overview);
  const auto op_fields = [](const OperatorRow& r) {
    return std::make_tuple(std::string("operator"), r.host_self, r.calls);
  };
  const auto kernel_fields = [](const KernelRow& r) {
    return std::make_tuple(std::string(kernel_class_name(r.kind)), r.total, r.count);
  };
  std::map<std::string, std::pair<Side, Side>> ops, kernels;
  add_rows(ops, before.operators, true, na, op_fields);
  add_rows(ops, after.operators, false, nb, op_fields);
  add_rows(kernels, before.kernels, true, na, kernel_fields);
  add_rows(kernels, after.kernels, false, nb, kernel_fields);
  diff.operators = compare(ops);
  diff.kernels = compare(kernels);
  return diff;
}

}  // namespace torchperf
