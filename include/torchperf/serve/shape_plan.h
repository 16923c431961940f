// The call shapes a server prepares before its first request (issue 62, part 3), planned from the
// traffic: the lengths calls are padded to (each with its share of the requests) and the rows a
// call may hold, busiest length first, within a memory budget. Where the model replays CUDA
// graphs each shape is captured and a call is padded up in rows to a captured one; elsewhere each
// runs once, so that a shape's first-call costs are paid at start-up, not by a request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "torchperf/serve/batching_policy.h"

namespace torchperf {

// One model call's shape: its rows (samples) and the length its varying dimension is padded to
// (0 for a model without one).
struct CallShape {
  std::int64_t rows = 0;
  std::int64_t length = 0;
  bool operator<(const CallShape& o) const {
    return length != o.length ? length < o.length : rows < o.rows;
  }
  bool operator==(const CallShape& o) const { return rows == o.rows && length == o.length; }
};

// A length calls are padded to, and the share of the requests whose calls run at it.
struct LengthShare {
  std::int64_t length = 0;
  double share = 0;
};

constexpr double kPreparingSeconds = 30;

struct ShapePlan {
  // In the order to prepare them, the most expected calls first: a length's share over the
  // shape's place among its row counts (a call of fewer rows comes more often at any rate), so
  // that a cap covers every busy length at few rows before any length at many.
  std::vector<CallShape> shapes;
  std::vector<LengthShare> lengths;  // the busiest first
  // A call runs at a prepared shape, its rows padded up to one and its length to its bucket's
  // edge (CUDA graphs); else a call runs at its own shape, and one not prepared runs as it
  // comes, counted off the plan.
  bool pads = false;
  std::vector<std::int64_t> edges;  // the queue's, which a padded call's length goes up to
  std::int64_t budget_bytes = 0;  // the memory an instance's shapes may take; 0: no budget
  // The seconds preparing may take, per instance: a start spent on shapes is a start a deploy
  // waits for.
  double budget_s = kPreparingSeconds;
  std::size_t capped = 0;         // shapes the count cap (--shapes N) left out
};

// The lengths calls run at under `policy`, each with its share of the requests: each drawn length
// (a request of its own) padded by the policy's rule, or with `to_edges` up to its bucket's edge;
// {0, 1} for a model without a length.
std::vector<LengthShare> call_lengths(const BatchingPolicy& policy,
                                      const std::vector<std::int64_t>& drawn, bool to_edges);

// The rows a call may hold at `length`: at most the policy's max_batch and, under a token budget,
// its tokens over the length; within the model's batch range (batch_max 0: no bound). Every count
// from the least, or (pads) powers of two and the most, so that a call pads up to few sizes.
std::vector<std::int64_t> call_rows(const BatchingPolicy& policy, std::int64_t length,
                                    std::int64_t batch_min, std::int64_t batch_max, bool pads);

// The plan for traffic whose lengths are `drawn` (empty: a model without a length): at most
// `most` shapes (the rest are left out of the plan, and said).
ShapePlan plan_shapes(const BatchingPolicy& policy, const std::vector<std::int64_t>& drawn,
                      std::int64_t batch_min, std::int64_t batch_max, bool pads,
                      std::size_t most, std::int64_t budget_bytes);

// Whether a shape of `tokens` (rows x length) may still be prepared: the memory used so far plus
// its estimate (the most any prepared shape took per token) within the budget (0: no budget).
bool within_budget(std::int64_t budget_bytes, std::int64_t used_bytes, double bytes_per_token,
                   double tokens);

// What a server prepared of its plan, and what a call runs at.
struct PreparedShapes {
  std::set<CallShape> shapes;
  bool pads = false;
  std::vector<std::int64_t> edges;
  // The memory one instance's took (device memory on CUDA, resident on CPU).
  std::int64_t bytes = 0;
  double seconds = 0;        // what preparing them took
  std::size_t left_out = 0;  // planned shapes the memory budget left out
  std::string stopped;  // why preparing stopped early (the time ran out), or ""
  std::size_t failed = 0;     // shapes whose call failed (left out; the rest still prepared)
  std::string first_failure;  // the first one's call and reason

  // The shape a call of `rows` at `length` runs at: itself when prepared; with pads its length
  // up to its bucket's edge and the fewest prepared rows from its own at that length; nothing
  // when it runs off the plan.
  std::optional<CallShape> serving(CallShape call) const;
  // "prepared 64 call shapes in 1.2 s (+38 MiB): length 48 (52% of requests) at 1-32 rows, ...;
  // the memory budget (256 MiB) left 8 out: calls at those shapes run unprepared, counted off the
  // plan in /metrics"
  std::string describe(const ShapePlan& plan) const;
};

// serve's --shapes: "planned" (the default: the plan's first kPlannedShapes), "lazy" (none: each
// shape prepared by its first call, as before), or N (the plan's first N). nullopt: lazy.
// UsageError naming the value otherwise.
constexpr std::size_t kPlannedShapes = 256;
std::optional<std::size_t> parse_shapes_option(const std::string& text);

}  // namespace torchperf
