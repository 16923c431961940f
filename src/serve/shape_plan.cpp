#include "torchperf/serve/shape_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "torchperf/error.h"
#include "torchperf/report/table_writer.h"

namespace torchperf {

namespace {

// A length padded up to the first edge that holds it (itself past the last, or without edges).
std::int64_t edge_of(const std::vector<std::int64_t>& edges, std::int64_t length) {
  const auto at = std::lower_bound(edges.begin(), edges.end(), length);
  return at == edges.end() ? length : *at;
}

}  // namespace

std::vector<LengthShare> call_lengths(const BatchingPolicy& policy,
                                      const std::vector<std::int64_t>& drawn, bool to_edges) {
  if (drawn.empty()) return {{0, 1.0}};
  std::map<std::int64_t, std::size_t> count;
  for (const auto l : drawn)
    ++count[to_edges && !policy.edges.empty() ? edge_of(policy.edges, padded_length(policy, l))
                                               : padded_length(policy, l)];
  std::vector<LengthShare> out;
  for (const auto& [length, n] : count)
    out.push_back({length, static_cast<double>(n) / static_cast<double>(drawn.size())});
  // The busiest first; among equals the shorter (cheaper to prepare).
  std::stable_sort(out.begin(), out.end(),
                   [](const LengthShare& a, const LengthShare& b) { return a.share > b.share; });
  return out;
}

std::vector<std::int64_t> call_rows(const BatchingPolicy& policy, std::int64_t length,
                                    std::int64_t batch_min, std::int64_t batch_max, bool pads) {
  std::int64_t most = static_cast<std::int64_t>(policy.max_batch);
  const std::int64_t limit = token_limit(policy);
  if (limit > 0) most = std::min(most, limit / std::max<std::int64_t>(1, length));
  if (batch_max > 0) most = std::min(most, batch_max);
  const std::int64_t least = std::max<std::int64_t>(1, batch_min);
  std::vector<std::int64_t> rows;
  if (most < least) return rows;
  if (!pads) {
    for (std::int64_t r = least; r <= most; ++r) rows.push_back(r);
    return rows;
  }
  for (std::int64_t r = 1; r < most; r *= 2)
    if (r >= least) rows.push_back(r);
  rows.push_back(most);
  return rows;
}

ShapePlan plan_shapes(const BatchingPolicy& policy, const std::vector<std::int64_t>& drawn,
                      std::int64_t batch_min, std::int64_t batch_max, bool pads,
                      std::size_t most, std::int64_t budget_bytes) {
  ShapePlan plan;
  plan.lengths = call_lengths(policy, drawn, pads);
  const auto& lengths = plan.lengths;
  plan.pads = pads;
  if (pads) plan.edges = policy.edges;
  plan.budget_bytes = budget_bytes;
  struct Ranked {
    CallShape shape;
    double expected;
  };
  std::vector<Ranked> ranked;
  for (const auto& l : lengths) {
    const auto rows = call_rows(policy, l.length, batch_min, batch_max, pads);
    for (std::size_t i = 0; i < rows.size(); ++i)
      ranked.push_back({{rows[i], l.length}, l.share / static_cast<double>(i + 1)});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.expected > b.expected; });
  for (const auto& r : ranked) {
    if (plan.shapes.size() == most) {
      ++plan.capped;
      continue;
    }
    plan.shapes.push_back(r.shape);
  }
  return plan;
}

bool within_budget(std::int64_t budget_bytes, std::int64_t used_bytes, double bytes_per_token,
                   double tokens) {
  return budget_bytes <= 0 || static_cast<double>(used_bytes) + bytes_per_token * tokens <=
                                  static_cast<double>(budget_bytes);
}

std::optional<CallShape> PreparedShapes::serving(CallShape call) const {
  if (shapes.count(call)) return call;
  if (!pads) return std::nullopt;
  call.length = edge_of(edges, call.length);
  const auto above = shapes.lower_bound(call);
  if (above != shapes.end() && above->length == call.length) return *above;
  return std::nullopt;
}

namespace {

// "1-32" for a run of consecutive counts, "1/2/4/8" otherwise.
std::string describe_rows(const std::vector<std::int64_t>& rows) {
  bool consecutive = rows.size() > 2;
  for (std::size_t i = 1; i < rows.size(); ++i) consecutive &= rows[i] == rows[i - 1] + 1;
  if (consecutive) return fmt::format("{}-{}", rows.front(), rows.back());
  return fmt::format("{}", fmt::join(rows, "/"));
}

}  // namespace

std::string PreparedShapes::describe(const ShapePlan& plan) const {
  std::string out = fmt::format("prepared {} call shape{} in {:.1f} s ({}{}){}", shapes.size(),
                                shapes.size() == 1 ? "" : "s", seconds, bytes < 0 ? "-" : "+",
                                format_bytes(std::abs(bytes)),
                                pads ? ", each a CUDA graph: a call pads its rows up to one and "
                                       "its length to its bucket's edge"
                                          : ", each run once");
  // The busiest lengths by name, the rest summed: a per-length plan holds hundreds.
  constexpr std::size_t kNamed = 6;
  double covered = 0, rest_share = 0;
  std::size_t named = 0, rest = 0;
  std::int64_t rest_rows = 0;
  std::string per_length;
  for (const auto& l : plan.lengths) {
    std::vector<std::int64_t> rows;
    for (const auto& s : shapes)
      if (s.length == l.length) rows.push_back(s.rows);
    if (rows.empty()) continue;
    covered += l.share;
    if (named++ >= kNamed) {
      ++rest;
      rest_share += l.share;
      rest_rows = std::max(rest_rows, rows.back());
      continue;
    }
    per_length += fmt::format("{}{} ({:.0f}% of requests) at {} rows",
                              per_length.empty() ? "" : ", ",
                              l.length > 0 ? "length " + std::to_string(l.length) : "every call",
                              100 * l.share, describe_rows(rows));
  }
  if (rest > 0)
    per_length += fmt::format(", {} more lengths ({:.0f}% of requests) at up to {} rows", rest,
                              100 * rest_share, rest_rows);
  if (!per_length.empty()) out += ": " + per_length;
  const auto uncovered = [&] {
    return fmt::format("{:.0f}% of requests at lengths with none", 100 * (1 - covered));
  };
  if (plan.capped > 0)
    out += fmt::format("; the cap of {} left {} more out ({})", plan.shapes.size(), plan.capped,
                       uncovered());
  if (left_out > 0)
    out += fmt::format("; the memory budget ({} an instance) left {} out ({})",
                       format_bytes(plan.budget_bytes),
                       left_out, uncovered());
  if (failed > 0)
    out += fmt::format("; {} failed and {} left out (the first: {})", failed,
                       failed == 1 ? "is" : "are", first_failure);
  if (!stopped.empty()) out += "; stopped: " + stopped;
  if (plan.capped > 0 || left_out > 0 || failed > 0 || !stopped.empty())
    out += pads ? ": a call at a shape not captured runs uncaptured, counted off the plan in "
                       "/metrics"
                     : ": a call at a shape not prepared runs as it comes, counted off the plan in "
                       "/metrics";
  return out;
}

std::optional<std::size_t> parse_shapes_option(const std::string& text) {
  if (text == "lazy") return std::nullopt;
  if (text == "planned") return kPlannedShapes;
  const bool digits = text.find_first_not_of("0123456789") == std::string::npos;
  if (!text.empty() && text.size() <= 6 && digits &&
      std::stoul(text) > 0)
    return static_cast<std::size_t>(std::stoul(text));
  throw UsageError("--shapes '" + text +
                   "': expected planned, lazy, or the most call shapes to prepare "
                   "(a count from 1)");
}

}  // namespace torchperf
