#include "torchperf/sweep/tune_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace torchperf {

std::string budget_words(double seconds) {
  return seconds < 120 ? fmt::format("{:.0f} s", seconds) : fmt::format("{:.0f} min", seconds / 60);
}

namespace {

TunePlan exhaustive_plan(const PlanInputs& in, const TuneBudget& budget, std::size_t left) {
  TunePlan plan;
  const double point_s = budget.point_estimate_s(false);
  plan.points = left;
  plan.estimated_s = static_cast<double>(left) * point_s / budget.slots() +
                     budget.confirmation_reserve_s();
  plan.summary = fmt::format(
      "exhaustive search: {} point(s) to run ({} of {} already in the journal), about {:.1f} "
      "min at ~{:.1f} s a point, then the leaders head to head",
      left, in.finished, in.total, plan.estimated_s / 60, point_s);
  if (budget.limited() && plan.estimated_s > budget.budget_s()) {
    const double room = std::max(0.0, budget.remaining_s());
    plan.points = std::min(left, static_cast<std::size_t>(std::floor(room / point_s)));
    plan.budget_too_small = true;
    plan.fits = plan.points;
    plan.budget_note = fmt::format(
        "the {} points to run need about {:.0f} min (at ~{:.1f} s a point, plus {:.0f} s to "
        "confirm the winner); the budget of {} fits about {}: the baseline and the "
        "single-knob changes run first, then the rest in random order",
        left, plan.estimated_s / 60, point_s, budget.confirmation_reserve_s(),
        budget_words(budget.budget_s()), plan.points);
    plan.summary = plan.budget_note;
  }
  return plan;
}

std::string screens_text(const PlanInputs& in) {
  const std::size_t changes = in.origin_screen - std::min<std::size_t>(in.origin_screen, 1);
  if (in.starts.empty())
    return fmt::format("the origin and its {} one-knob changes, then the guides' expert start "
                       "and its one-knob changes",
                       changes);
  return fmt::format("first the guides' starts ({}), then the one-knob changes around the best of "
                     "them, then the origin and its {} one-knob changes",
                     in.starts, changes);
}

TunePlan smart_plan(const PlanInputs& in, const TuneBudget& budget, std::size_t left) {
  TunePlan plan;
  const std::size_t screen = std::min(left, 2 * in.origin_screen);
  const std::size_t explore = std::max<std::size_t>(4, in.axes);
  const bool tiny = in.total <= in.finalists;
  plan.points = tiny ? left : std::min(left, screen + explore + in.finalists);
  const double brief = budget.point_estimate_s(true), full = budget.point_estimate_s(false);
  const double screen_s = static_cast<double>(screen) * brief;
  const double finals_s = static_cast<double>(in.finalists) * full;
  const double reserve = budget.confirmation_reserve_s();
  plan.estimated_s = tiny ? static_cast<double>(left) * full + reserve
                          : screen_s + static_cast<double>(explore) * brief + finals_s + reserve;
  if (tiny) {
    plan.summary = fmt::format("smart search: the space has {} point(s), each measured once in "
                               "full (~{:.1f} s a point), then the leaders head to head",
                               in.total, full);
  } else {
    plan.summary = fmt::format(
        "smart search over {} points: {}, measured briefly ({:.2g} s, ~{:.1f} s a point and its "
        "compile), then the untried points a fitted model ranks best per second of cost ({}), "
        "then the best {} again in full ({:.2g} s, ~{:.1f} s a point) and the leaders head to "
        "head: {}",
        in.total, screens_text(in), budget.brief_time_s(), brief,
        budget.limited() ? std::string("while the budget lasts")
                         : fmt::format("until they stop beating the best, at least {}", explore),
        in.finalists, in.full_time_s, full,
        budget.limited() ? "within the budget of " + budget_words(budget.budget_s())
                         : fmt::format("about {:.1f} min", plan.estimated_s / 60));
  }
  if (!in.compiles.empty()) plan.summary += "; " + in.compiles;
  if (!in.machines.empty()) plan.summary += "; " + in.machines;
  const double room = budget.remaining_s();
  if (!tiny && budget.limited() && room < screen_s + finals_s) {
    const std::size_t fits = static_cast<std::size_t>(
        std::max(0.0, std::floor((room - finals_s) / std::max(brief, 1e-9))));
    plan.budget_too_small = true;
    plan.fits = std::min(fits, screen);
    plan.budget_note = fmt::format(
        "the budget of {} is too small to screen every one-knob change: that needs about "
        "{:.1f} min ({} brief points at ~{:.1f} s, {} finalists at ~{:.1f} s and {:.0f} s to "
        "confirm the winner); {}, then the best of them in full, the rest unconfirmed",
        budget_words(budget.budget_s()), (screen_s + finals_s + reserve) / 60, screen, brief, in.finalists,
        full, reserve,
        plan.fits == 0 ? std::string("the guides' first starts are measured while it lasts")
                       : fmt::format("about {} screening points fit", plan.fits));
    plan.summary += "; " + plan.budget_note;
  }
  return plan;
}

}  // namespace

TunePlan make_plan(const PlanInputs& in, const TuneBudget& budget) {
  const std::size_t left = in.total - std::min(in.total, in.finished);
  if (in.search == SearchKind::kExhaustive) {
    TunePlan plan = exhaustive_plan(in, budget, left);
    if (!in.machines.empty()) plan.summary += "; " + in.machines;
    return plan;
  }
  return smart_plan(in, budget, left);
}

}  // namespace torchperf
