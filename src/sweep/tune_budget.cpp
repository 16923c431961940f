#include "torchperf/sweep/tune_budget.h"

#include <algorithm>
#include <cmath>

namespace torchperf {

namespace {

// A worker's start-up (loading LibTorch and the model, the accuracy check) before any timing,
// until the describe and reference jobs have measured one.
constexpr double kStartupGuessS = 2.0;
// The Python worker's start-up (the interpreter, torch and the program) before anything is timed.
constexpr double kPythonStartupGuessS = 5;

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

TuneBudget::TuneBudget(TimeSource& time, BudgetSettings settings)
    : time_(time), settings_(settings), start_(time.now()) {}

double TuneBudget::elapsed_s() const { return to_seconds(time_.now() - start_); }

double TuneBudget::wall_left_s() const {
  if (!limited()) return std::numeric_limits<double>::infinity();
  return settings_.budget_s - elapsed_s();
}

double TuneBudget::remaining_s(double out_s) const {
  if (!limited()) return std::numeric_limits<double>::infinity();
  return (wall_left_s() - held_back_s()) * slots() - out_s;
}

void TuneBudget::add_point(bool brief, bool python, bool fresh_worker, double wall_s) {
  (brief ? brief_walls_ : full_walls_).push_back(wall_s);
  if (python) (brief ? python_brief_walls_ : python_full_walls_).push_back(wall_s);
  if (brief && fresh_worker && !python) fresh_brief_walls_.push_back(wall_s);
}

// A full point not yet seen costs a brief one plus the longer caps, and the start-up of a worker
// of its own: estimated from the brief points that started their shared worker (the others paid
// no start-up).
double TuneBudget::point_estimate_s(bool brief) const {
  const double full_time = settings_.full_time_s;
  const double brief_time = brief_time_s();
  if (brief) {
    if (!brief_walls_.empty()) return median_of(brief_walls_);
    if (!full_walls_.empty()) return median_of(full_walls_);
    return 2 * brief_time + startup_s();
  }
  if (!full_walls_.empty()) return median_of(full_walls_);
  if (!fresh_brief_walls_.empty())
    return median_of(fresh_brief_walls_) + 2 * (full_time - brief_time);
  if (!brief_walls_.empty()) return median_of(brief_walls_) + 2 * (full_time - brief_time);
  return 2 * full_time + startup_s();
}

// The describe and reference jobs each start a worker and load the model: what a point pays
// before its warm-up, known before the first point (a ViT-B's is ~8 s, not 2).
double TuneBudget::startup_s() const {
  return startup_walls_.empty() ? kStartupGuessS : median_of(startup_walls_);
}

// A Python point starts an interpreter of its own; a brief C++ point shares a warm worker.
double TuneBudget::point_cost_s(std::size_t point, bool brief) const {
  double base = point_estimate_s(brief);
  if (prices_ && prices_->in_python(point)) {
    const auto& walls = brief ? python_brief_walls_ : python_full_walls_;
    if (!walls.empty())
      base = median_of(walls);
    else if (!python_brief_walls_.empty())
      base = median_of(python_brief_walls_) + 2 * (settings_.full_time_s - brief_time_s());
    else
      base += kPythonStartupGuessS;
  }
  return base + (prices_ ? prices_->compile_estimate_s(point, brief) : 0);
}

// A slow point (a big batch, emulated bf16) makes a slow pair: at least two points' worth. A
// side opens as a point does: a worker that loads a package, or a slot in a Python worker that
// holds the graph already; not what the describe and reference jobs took, which on a stream
// compute the reference over its lengths (bench 23: 5.8 s, where points opened in 1.2 s, so
// its three pairs held back 83 s and took 55 s).
double TuneBudget::pair_estimate_s() const {
  const double open_s = overheads_.empty() ? startup_s() : median_of(overheads_);
  return std::max(8 * settings_.full_time_s + 2 * open_s, 2 * point_estimate_s(false));
}

double TuneBudget::confirmation_reserve_s() const {
  // The leaders after the first, the careful configuration, the baseline where it differs from
  // it, and the model as given.
  const std::size_t leaders = space_points_ > 0 ? std::min(settings_.leaders, space_points_)
                                                : settings_.leaders;
  const double pairs = static_cast<double>(std::max<std::size_t>(1, leaders)) - 1 + 1 +
                       (distinct_baseline_ ? 1 : 0) + (settings_.as_given ? 1 : 0);
  return pairs * pair_estimate_s();
}

double TuneBudget::held_back_s() const {
  const double reserve = confirmation_reserve_s();
  return limited() ? std::min(reserve, settings_.budget_s / 2) : reserve;
}

// A slow model is measured more briefly rather than left half-screened.
double TuneBudget::choose_brief_time_s(std::size_t screen, std::size_t finalists) const {
  const double full_time = settings_.full_time_s;
  const double wanted = std::min(full_time, std::max(0.2, full_time / 4));
  if (!limited()) return wanted;
  const double finals = static_cast<double>(finalists) * (2 * full_time + startup_s());
  const double room = remaining_s() - finals;
  const double per_point = room / static_cast<double>(std::max<std::size_t>(1, screen));
  // Where start-up alone does not fit, no brief time makes the screen fit: a shorter one would
  // only rank on noise (the plan says what the budget fits instead).
  if (per_point < startup_s() + 2 * 0.1) return wanted;
  return std::clamp((per_point - startup_s()) / 2, 0.1, wanted);
}

double TuneBudget::eta_s(double points_left, bool mostly_brief) const {
  const double eta =
      std::max(0.0, points_left) * point_estimate_s(mostly_brief) / slots() + confirmation_reserve_s();
  return limited() ? std::min(eta, std::max(0.0, wall_left_s())) : eta;
}

BudgetView TuneBudget::view(double out_s) const {
  BudgetView view;
  view.remaining_s = remaining_s(out_s);
  view.brief_point_s = point_estimate_s(true);
  view.full_point_s = point_estimate_s(false);
  view.point_s = [this](std::size_t i, bool brief) { return point_cost_s(i, brief); };
  return view;
}

}  // namespace torchperf
