// How tune chooses which points of the space to measure, and for how long. Exhaustive: every
// point at the full time, the origin and one-knob changes first. Smart: the guides' starts, then
// the one-knob changes screened briefly, then the untried points a fitted model ranks best per
// second of cost, then the best few measured at the full time. The supervisor runs what a search proposes and tells it what came of it; a
// search knows nothing of workers or clocks, so it is tested on synthetic scores.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/sweep/space.h"

namespace torchperf {

enum class SearchKind { kExhaustive, kSmart };
std::string to_string(SearchKind kind);
// Throws UsageError naming the strategies for another name.
SearchKind search_kind_from_string(const std::string& name);

// Why a point is measured: screen (the origin and its one-knob changes), explore (the model's
// best guess among the untried), final (a finalist again at the full time), sweep (exhaustive).
enum class SearchStage { kScreen, kExplore, kFinal, kSweep };
std::string to_string(SearchStage stage);
SearchStage search_stage_from_string(const std::string& name);  // std::invalid_argument

struct Proposal {
  std::size_t point = 0;  // index into Space::points
  SearchStage stage = SearchStage::kSweep;
  bool brief = false;  // measured for the brief time, not the full one
};

// What the supervisor can still spend on points, in seconds, after the confirmation's reserve,
// and what a point costs (wall time, start-up included), from the points run so far.
struct BudgetView {
  BudgetView() = default;
  BudgetView(double remaining, double brief, double full)
      : remaining_s(remaining), brief_point_s(brief), full_point_s(full) {}
  double remaining_s = std::numeric_limits<double>::infinity();
  double brief_point_s = 0;
  double full_point_s = 0;
  // What measuring one given point costs, its compile included (nothing when the compile is in the
  // cache or already paid); empty: every point costs brief_point_s or full_point_s.
  std::function<double(std::size_t point, bool brief)> point_s;
  double cost(std::size_t point, bool brief) const {
    return point_s ? point_s(point, brief) : brief ? brief_point_s : full_point_s;
  }
};

class Search {
 public:
  virtual ~Search() = default;
  // The next point to measure, or nothing: the search is done, or the budget cannot pay for what
  // it would do next.
  virtual std::optional<Proposal> next(const BudgetView& budget) = 0;
  // What came of a proposal (or of a point read back from a journal): higher is better; nothing
  // when the point failed or fell outside the accuracy guard.
  virtual void record(std::size_t point, bool brief, std::optional<double> score) = 0;
  // A recorded point was stopped clearly behind the leader (StopReason::kBehindLeader): its score
  // comes from its first blocks only, and a finalist's full measurement is not spent on it.
  virtual void stopped_behind(std::size_t point) {}
  // The number of points each stage proposed so far, e.g. "screen 13, explore 9, final 4".
  virtual std::string spent() const = 0;
  // Whether the budget, not the search, ended it (points it would have measured were left out).
  virtual bool cut_by_budget() const = 0;
  // Whether next() may be asked again before the points it proposed are recorded (a cluster
  // measures several at once): what it would propose next does not depend on their results. It
  // never proposes a point that is still out.
  virtual bool proposes_ahead() const = 0;
};

// A briefly measured point whose score is this many times below the leader's is out of reach:
// under a budget, not a finalist after the runner-up. A brief score on a stream read up to 1.7x
// its full one (bench 23, stop 70), never 3x; that run measured two fp32 finalists 3.3-5x behind
// its leaders in full and paired one with the winner (55 s of its 5 minutes).
inline constexpr double kOutOfReach = 3;

struct SearchOptions {
  SearchOptions() = default;
  SearchOptions(std::uint64_t order_seed) : seed(order_seed) {}  // NOLINT: {seed} reads well
  std::uint64_t seed = 0;
  std::size_t finalists = 4;  // smart: the best briefly measured points measured again in full
  // smart: exploration stops once this many proposals in a row found no better point, or the
  // model predicts no untried point within `tolerance` of the leader.
  std::size_t patience = 0;  // 0: the number of axes, at least 4
  double tolerance = 0.03;
  // smart: finalists out of the leader's reach (kOutOfReach) are left out after the runner-up,
  // as a budget needs; without one, the best `finalists` are all measured in full.
  bool finals_in_reach = false;
  // smart: points measured first, briefly, before any screen (the guides' starts); the screen
  // then goes around the best of them, and around the origin after.
  std::vector<std::size_t> first;
};

std::unique_ptr<Search> make_search(SearchKind kind, const Space& space,
                                    const SearchOptions& options = {});

// Each point's value index on each axis (Space::axes order), read from its configuration.
std::vector<std::vector<std::size_t>> point_assignments(const Space& space);

}  // namespace torchperf
