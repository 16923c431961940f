#include "torchperf/trace/trace_ranks.h"

#include <algorithm>
#include <set>

#include "torchperf/error.h"

namespace torchperf {
namespace {

std::string describe_steps(const std::vector<StepBreakdown>& steps) {
  if (steps.empty() || steps.front().number < 0) return "no annotated steps";
  return std::to_string(steps.size()) + " (#" + std::to_string(steps.front().number) + "-#" +
         std::to_string(steps.back().number) + ")";
}

}  // namespace

RankComparison compare_ranks(const std::vector<TraceAnalysis>& traces, bool strict) {
  RankComparison result;
  if (traces.empty()) return result;
  // The step numbers every rank has.
  std::set<std::int64_t> shared;
  bool first = true, differ = false;
  for (const TraceAnalysis& t : traces) {
    const TraceOverview& o = t.overview;
    std::set<std::int64_t> mine;
    for (const StepBreakdown& s : o.steps) mine.insert(s.number);
    if (first) {
      shared = mine;
      first = false;
      continue;
    }
    if (mine != shared) differ = true;
    std::set<std::int64_t> both;
    std::set_intersection(shared.begin(), shared.end(), mine.begin(), mine.end(),
                          std::inserter(both, both.begin()));
    shared = both;
  }
  result.shared_steps.assign(shared.begin(), shared.end());
  if (differ) {
    std::string line = "the ranks have different steps:";
    for (std::size_t i = 0; i < traces.size(); ++i)
      line += (i > 0 ? "," : "") + std::string(" rank ") +
              std::to_string(traces[i].info.rank >= 0 ? traces[i].info.rank : static_cast<int>(i)) +
              " (" + traces[i].info.path + ") has " + describe_steps(traces[i].overview.steps);
    if (shared.empty())
      line += "; no step is shared, so each rank's mean is over all its steps";
    else
      line += "; the comparison uses the " + std::to_string(shared.size()) + " steps they share";
    if (strict) throw TraceError(line + " (--strict)");
    result.warning = line;
  }
  for (std::size_t i = 0; i < traces.size(); ++i) {
    RankRow row;
    row.trace = i;
    row.rank = traces[i].info.rank >= 0 ? traces[i].info.rank : static_cast<int>(i);
    row.path = traces[i].info.path;
    row.steps = traces[i].overview.annotated_steps ? traces[i].overview.steps.size() : 0;
    double n = 0;
    for (const StepBreakdown& s : traces[i].overview.steps) {
      if (!shared.empty() && shared.count(s.number) == 0) continue;
      n += 1;
      row.step += s.duration();
      row.kernel += s.time[static_cast<std::size_t>(TimeCategory::kKernel)];
      row.communication += s.time[static_cast<std::size_t>(TimeCategory::kCommunication)];
      row.utilization += s.device_busy;
    }
    if (n > 0) {
      row.step /= n;
      row.kernel /= n;
      row.communication /= n;
      row.utilization = row.step > 0 ? row.utilization / n / row.step : 0;
    }
    row.overlap = traces[i].overview.overlap();
    result.ranks.push_back(row);
  }
  std::vector<std::size_t> order(result.ranks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return result.ranks[a].rank < result.ranks[b].rank;
  });
  std::vector<RankRow> sorted;
  for (std::size_t i : order) sorted.push_back(result.ranks[i]);
  result.ranks = sorted;
  double fastest = 0, slowest = 0;
  for (std::size_t i = 0; i < result.ranks.size(); ++i) {
    const double s = result.ranks[i].step;
    if (i == 0 || s > slowest) {
      slowest = s;
      result.slowest = i;
    }
    if (i == 0 || s < fastest) fastest = s;
  }
  result.spread = fastest > 0 ? slowest / fastest : 0;
  return result;
}

}  // namespace torchperf
