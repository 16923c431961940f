#include "torchperf/trace/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <map>

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

}  // namespace

TraceDiff diff_traces(const TraceAnalysis& before, const TraceAnalysis& after) {
  const std::string& before_path = before.info.path;
  const std::string& after_path = after.info.path;
  const TraceOverview& before_overview = before.overview;
  const TraceOverview& after_overview = after.overview;
  const auto& before_ops = before.operators;
  const auto& after_ops = after.operators;
  const auto& before_kernels = before.kernels;
  const auto& after_kernels = after.kernels;
  TraceDiff diff;
  diff.before = before_path;
  diff.after = after_path;
  diff.step_before = before_overview.average;
  diff.step_after = after_overview.average;
  diff.steps_before = before_overview.steps.size();
  diff.steps_after = after_overview.steps.size();
  const double na = steps_of(before_overview), nb = steps_of(after_overview);

  std::map<std::string, std::pair<Side, Side>> ops;
  for (const OperatorRow& r : before_ops) {
    Side& s = ops[r.name].first;
    s.present = true;
    s.kind = "operator";
    s.time += r.host_self / na;
    s.calls += static_cast<double>(r.calls) / na;
  }
  for (const OperatorRow& r : after_ops) {
    Side& s = ops[r.name].second;
    s.present = true;
    s.kind = "operator";
    s.time += r.host_self / nb;
    s.calls += static_cast<double>(r.calls) / nb;
  }
  std::map<std::string, std::pair<Side, Side>> kernels;
  for (const KernelRow& r : before_kernels) {
    Side& s = kernels[r.name].first;
    s.present = true;
    s.kind = kernel_class_name(r.kind);
    s.time += r.total / na;
    s.calls += static_cast<double>(r.count) / na;
  }
  for (const KernelRow& r : after_kernels) {
    Side& s = kernels[r.name].second;
    s.present = true;
    s.kind = kernel_class_name(r.kind);
    s.time += r.total / nb;
    s.calls += static_cast<double>(r.count) / nb;
  }
  diff.operators = compare(ops);
  diff.kernels = compare(kernels);
  return diff;
}

}  // namespace torchperf
