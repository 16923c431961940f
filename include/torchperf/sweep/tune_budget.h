// What a tune's points cost and what its budget has left: the one place that reads the clock for
// the budget, keeps the walls the points took, prices a point before it runs (its compile from
// the artefacts' history), and holds back the confirmation's reserve. The plan, the ETA, the
// search and the notes all read the same `remaining_s`.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

#include "torchperf/measure/clock.h"
#include "torchperf/sweep/search.h"

namespace torchperf {

// What the budget needs to know of one point before it runs: whether it runs in the Python worker
// (an interpreter of its own to start) and what its compile will cost (0: cached or paid; a
// brief point's shared worker may hold a graph an earlier point compiled, a full point's not).
class PointPrices {
 public:
  virtual ~PointPrices() = default;
  virtual bool in_python(std::size_t point) const = 0;
  virtual double compile_estimate_s(std::size_t point, bool brief) const = 0;
};

struct BudgetSettings {
  double budget_s = 0;     // 0: none
  double full_time_s = 3;  // a point's measurement time in full
  std::size_t leaders = 3;
  bool as_given = false;   // the winner is also compared with the model as given
};

class TuneBudget {
 public:
  // The clock starts now. prices may be null until the space is known (every point then costs
  // the same).
  TuneBudget(TimeSource& time, BudgetSettings settings);

  void set_prices(const PointPrices* prices) { prices_ = prices; }
  // Points measured at once: a cluster's nodes, read each time (a node lost costs its share).
  // Budgets buy node-seconds.
  void set_slots(std::function<std::size_t()> slots) { slots_ = std::move(slots); }
  void set_brief_time_s(double s) { brief_time_s_ = s; }
  // The baseline is a pair of its own only when it is not the careful configuration (a
  // program's is the same one): the confirmation's reserve counts the pairs it will run.
  void set_distinct_baseline(bool distinct) { distinct_baseline_ = distinct; }
  // The space's points: no more leaders are confirmed than it holds (a one-point space held back
  // 60 s of a 2-minute budget for leaders it could not have, issue 63).
  void set_space_points(std::size_t points) { space_points_ = points; }

  bool limited() const { return settings_.budget_s > 0; }
  double slots() const {
    const std::size_t n = slots_ ? slots_() : 1;
    return static_cast<double>(n == 0 ? 1 : n);
  }
  // Whether a brief point has been measured (its wall is evidence, not a guess).
  bool measured_brief() const { return !brief_walls_.empty(); }
  double budget_s() const { return settings_.budget_s; }
  double brief_time_s() const { return brief_time_s_ > 0 ? brief_time_s_ : settings_.full_time_s; }
  double elapsed_s() const;
  // Wall seconds left of the budget (infinite without one): what the confirmation itself may
  // still spend.
  double wall_left_s() const;
  // Node-seconds left for points: the budget less what has run, the confirmation's reserve, and
  // what the points still out will take (infinite without a budget).
  double remaining_s(double out_s = 0) const;

  // What was measured: a describe or reference job's start-up; a point's wall (its own compile
  // left out), whether it was brief, ran in Python, and started its worker.
  void add_startup(double wall_s) { startup_walls_.push_back(wall_s); }
  void add_point(bool brief, bool python, bool fresh_worker, double wall_s);
  // A point's overhead: its wall less its warm-up and timed phase (opening its side).
  void add_overhead(double overhead_s) { overheads_.push_back(overhead_s); }

  // A point's wall from this session's points of that length; before any, warm-up and
  // measurement at their caps plus start-up.
  double point_estimate_s(bool brief) const;
  // A worker's start-up and one model load, as the describe and reference jobs measured it.
  double startup_s() const;
  // One point's cost: its worker kind's walls plus its compile.
  double point_cost_s(std::size_t point, bool brief) const;
  // The leaders head to head and the winner against baseline, careful and (when given) the model
  // as given: interleaved pairs, each with several point times plus start-up.
  double confirmation_reserve_s() const;
  // One of those pairs: its sides' warm-ups and rounds, and opening each side (what the points
  // paid for it, once measured; before, the start-up).
  double pair_estimate_s() const;
  // What the sweep holds back for the confirmation: its reserve, but never more than half the
  // budget. Measuring comes first: a short budget measures what it can and names its best point
  // unconfirmed rather than measuring nothing.
  double held_back_s() const;
  // The brief time of a smart search: a quarter of the full time, or less when the budget could
  // not otherwise screen `screen` points and measure `finalists` in full.
  double choose_brief_time_s(std::size_t screen, std::size_t finalists) const;
  // Seconds to the end: the points still planned, what is left of the current one, the reserve;
  // never past the budget.
  double eta_s(double points_left, bool mostly_brief) const;
  // What the search sees.
  BudgetView view(double out_s = 0) const;

 private:
  TimeSource& time_;
  BudgetSettings settings_;
  Clock::time_point start_;
  const PointPrices* prices_ = nullptr;
  std::function<std::size_t()> slots_;
  double brief_time_s_ = 0;
  std::size_t space_points_ = 0;  // 0: not known yet
  bool distinct_baseline_ = true;
  std::vector<double> brief_walls_, full_walls_;                // compiles left out
  std::vector<double> python_brief_walls_, python_full_walls_;  // the Python worker's
  std::vector<double> fresh_brief_walls_;  // brief points that started their worker
  std::vector<double> startup_walls_;      // describe and reference jobs
  std::vector<double> overheads_;          // points' walls less warm-up and timed phase
};

// The median: one cold start or one point that hung to its timeout does not make every later
// point look that slow.
double median_of(std::vector<double> values);

}  // namespace torchperf
