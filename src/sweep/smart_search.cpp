#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "searches.h"
#include "torchperf/sweep/score_model.h"

// The smart search. Why these stages: the guides' starts (torch.compile with channels_last, the
// AOTInductor package, the best TorchScript graph) come first because a careful person tries them
// first, and a budget of minutes may pay for little else when each compiles for a minute; the
// screen then goes around the best of them. The one-knob changes from the origin give every main effect
// for a dozen points; knobs on a CPU interact strongly (bf16 pays only with a frozen graph and
// channels_last together), so a second screen starts from what the guides advise (each knob's
// expert value) and measures the one-knob changes from there. Then the untried points are ranked
// by a model with pairwise interactions, refitted after each point, and the best guess is
// measured until guesses stop beating the leader; when no guess comes near it, the leader's own
// one-knob changes are tried (coordinate climbing); a value that never passed is not explored.
// Screening and exploring use brief measurements (a ranking needs a few percent, not one); the
// best few are then measured in full, and tune's confirmation decides between them.

namespace torchperf {
namespace {

// A guess's expected gain over the leader per second of its cost. It is counted from a little
// below the leader (a guess 5% short may still win: the model is a guess), unless the guess costs
// what several points cost: then it must be expected to win. Bench 23's explore (stop 70) paid
// 63 s for three new compiles, none of which led, what some forty variants of the leader's own
// graph cost.
double guess_gain_per_s(double predicted, double leader, double cost_s, bool dear) {
  constexpr double kGuessSlack = 0.05;
  return (predicted / leader - 1 + (dear ? 0 : kGuessSlack)) / std::max(1e-3, cost_s);
}

class SmartSearch final : public Search {
 public:
  SmartSearch(const Space& space, const SearchOptions& options)
      : options_(options),
        assignments_(point_assignments(space)),
        brief_(space.points.size()),
        full_(space.points.size()),
        measured_brief_(space.points.size(), false),
        measured_full_(space.points.size(), false),
        proposed_(space.points.size(), false),
        out_(space.points.size(), false),
        behind_(space.points.size(), false) {
    for (const auto& axis : space.axes) levels_.push_back(axis.values.size());
    model_.emplace(levels_);
    if (options_.patience == 0) options_.patience = std::max<std::size_t>(4, levels_.size());
    // Tiny spaces: every point is measured anyway, so measure each once, in full.
    all_full_ = space.points.size() <= options_.finalists;
    // The origin is the assignment of the space's origin configuration, where it is a point.
    std::vector<std::size_t> origin;
    for (const auto& axis : space.axes) {
      const auto v = space.origin.get(axis.knob);
      const auto it = v ? std::find(axis.values.begin(), axis.values.end(), *v) : axis.values.end();
      origin.push_back(
          it == axis.values.end() ? 0 : static_cast<std::size_t>(it - axis.values.begin()));
    }
    for (const auto& axis : space.axes) {
      const auto it = std::find(axis.values.begin(), axis.values.end(), axis.expert);
      expert_.push_back(axis.expert.empty() || it == axis.values.end()
                            ? std::nullopt
                            : std::optional<std::size_t>(it - axis.values.begin()));
    }
    origin_ = origin;
    rng_.seed(options_.seed);
    for (const std::size_t i : options_.first)
      if (i < assignments_.size() && std::find(screen_.begin(), screen_.end(), i) == screen_.end())
        screen_.push_back(i);
    starts_ = screen_.size();
    if (screen_.empty()) add_screen_around(origin);
    if (screen_.empty()) screen_.push_back(0);
  }

  std::optional<Proposal> next(const BudgetView& budget) override {
    // Measured estimates may leave room again for the stages (a guessed cost was the whole
    // budget, a measured one a second or two).
    if (lean_ && affords_exploring(budget, cheapest_unmeasured(budget))) lean_ = false;
    if (lean_ || starved(budget)) return next_lean(budget);
    if (stage_ == SearchStage::kScreen) {
      for (;;) {
        if (const auto point = next_screened(budget))
          return propose(*point, SearchStage::kScreen);
        if (!add_next_screen(budget)) break;
      }
      // What was screened goes straight to the finals; after the finals, what the budget has left
      // goes to the skipped points it now pays for, then to exploring.
      if (skipped_ && !resumed_) {
        cut(SearchStage::kScreen);
      } else {
        cut_ = cut_ || skipped_;  // the skipped points are still left out
        stage_ = SearchStage::kExplore;
        since_better_ = 0;
      }
    }
    if (stage_ == SearchStage::kExplore) {
      if (since_better_ < options_.patience) {
        priced_out_ = false;
        std::optional<std::size_t> guess = best_guess(budget);
        if (!guess) guess = next_climb(budget);
        if (guess) return propose(*guess, SearchStage::kExplore);
        // Points were left for their cost, not for the model's doubt: the budget ended it.
        if (priced_out_ && !resumed_) {
          cut(SearchStage::kExplore);
          return next(budget);
        }
        cut_ = cut_ || priced_out_;
      }
      stage_ = SearchStage::kFinal;
    }
    if (all_full_) return std::nullopt;
    for (std::size_t i : finalists()) {
      if (measured_full_[i] || out_[i]) continue;
      if (budget.remaining_s < budget.cost(i, false)) {
        cut_ = true;
        return std::nullopt;
      }
      ++spent_final_;
      out_[i] = true;
      return Proposal{i, SearchStage::kFinal, false};
    }
    // The finalists are measured. A stage the budget cut goes on when the estimates, now from
    // measured full points, leave room again: a budget is not left unspent while points remain.
    if (cut_ && resume_ && affords_exploring(budget, cheapest_unmeasured(budget))) {
      stage_ = *resume_;
      resume_.reset();
      cut_ = false;
      resumed_ = true;
      return next(budget);  // proposes, or ends with the stage done
    }
    return std::nullopt;
  }

  void record(std::size_t point, bool brief, std::optional<double> score) override {
    out_.at(point) = false;
    if (brief || all_full_) {
      measured_brief_.at(point) = true;
      brief_[point] = score;
      if (all_full_) {
        measured_full_[point] = true;
        full_[point] = score;
      }
      if (score && (!leader_ || *score > *leader_)) {
        leader_ = score;
        since_better_ = 0;
      } else if (stage_ == SearchStage::kExplore) {
        ++since_better_;
      }
    } else {
      measured_full_.at(point) = true;
      full_[point] = score;
    }
  }

  void stopped_behind(std::size_t point) override { behind_.at(point) = true; }

  bool cut_by_budget() const override { return cut_; }

  // A screen's points are known before its results; so are the model's guesses (it is fitted on
  // what came back; the points still out are not guessed again) and the finalists once chosen.
  // The next screen, centred on the best start, waits for the starts' results.
  bool proposes_ahead() const override {
    switch (stage_) {
      case SearchStage::kScreen:
        for (std::size_t k = screen_next_; k < screen_.size(); ++k)
          if (!measured(screen_[k]) && !proposed_[screen_[k]]) return true;
        for (std::size_t k = 0; k < starts_; ++k)
          if (!measured(screen_[k]) && !proposed_[screen_[k]]) return true;
        return false;
      case SearchStage::kExplore: return true;
      default:
        for (std::size_t i : finalists())
          if (!measured_full_[i] && !out_[i]) return true;
        return false;
    }
  }

  std::string spent() const override {
    std::string s =
        "screen " + std::to_string(spent_screen_) + ", explore " + std::to_string(spent_explore_);
    if (!all_full_) s += ", final " + std::to_string(spent_final_);
    return s;
  }

 private:
  static std::size_t distance(const std::vector<std::size_t>& a,
                              const std::vector<std::size_t>& b) {
    std::size_t d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
    return d;
  }

  bool measured(std::size_t i) const { return measured_brief_[i] || measured_full_[i]; }

  // The cheapest unmeasured point of the screens so far that the budget pays for, in screen
  // order among equals: a change that compiles for a minute waits behind those that do not. One
  // the budget cannot pay for is skipped (the search was cut, and says so); when the finals leave
  // room again, the skipped ones come first, the guides' starts before the rest.
  std::optional<std::size_t> next_screened(const BudgetView& budget) {
    std::optional<std::size_t> best;
    double best_cost = 0;
    // A budget that cannot pay for every start measures them in order of expected gain per
    // second (issue 60): no start is expected to gain more than another before it is measured,
    // so the cheapest first; one that can keeps the guides' order.
    double starts_cost = 0;
    for (std::size_t k = 0; k < starts_ && k < screen_.size(); ++k)
      if (!measured(screen_[k]) && !proposed_[screen_[k]])
        starts_cost += budget.cost(screen_[k], !all_full_);
    const bool starts_by_cost = !affords_exploring(budget, starts_cost);
    std::optional<std::size_t> cheapest_start;
    double cheapest_cost = 0;
    for (std::size_t k = 0; k < screen_.size(); ++k) {
      if (k == starts_ && cheapest_start) return cheapest_start;
      // Earlier screens hold only points measured, proposed or skipped.
      if (k >= starts_ && k < screen_next_ && !resumed_) continue;
      const std::size_t i = screen_[k];
      if (measured(i) || proposed_[i]) continue;
      const double c = budget.cost(i, !all_full_);
      // A one-knob change dearer than a share of what is left, and than a few plain points, waits
      // for the model, which ranks it by expected gain per second: Python's max-autotune took 56 s
      // of bench 23's 5 minutes in its screen, what some twenty cheaper points cost. The guides'
      // starts do not wait, nor does a point that costs about what any point costs.
      const bool dear =
          c > kScreenShare * budget.remaining_s && c > kDearPoints * budget.brief_point_s;
      if (!affords_exploring(budget, c) || (k >= starts_ && dear)) {
        skipped_ = true;
        continue;
      }
      // The guides' starts keep their order: the first is the one a careful person tries first.
      if (k < starts_ && !starts_by_cost) return i;
      if (k < starts_) {
        if (!cheapest_start || c < cheapest_cost) {
          cheapest_start = i;
          cheapest_cost = c;
        }
        continue;
      }
      if (!best || c < best_cost) {
        best = i;
        best_cost = c;
      }
    }
    return cheapest_start ? cheapest_start : best;
  }

  // Appends the next screen: with the guides' starts, around the best of them and then around the
  // origin; without, around the expert start after the origin. False when none is left.
  bool add_next_screen(const BudgetView& budget) {
    screen_next_ = screen_.size();
    const std::size_t before = screen_.size();
    if (starts_ > 0 && screens_ == 0) {
      std::optional<std::size_t> best;
      for (std::size_t k = 0; k < starts_; ++k)
        if (brief_[screen_[k]] && (!best || *brief_[screen_[k]] > *brief_[*best])) best = screen_[k];
      add_screen_around(assignments_[best ? *best : screen_.front()]);
    } else if (screens_ == (starts_ > 0 ? 1 : 0)) {
      add_screen_around(starts_ > 0 ? origin_ : expert_start());
      std::size_t unmeasured = 0;
      double cost = 0;
      for (std::size_t i = before; i < screen_.size(); ++i)
        if (!measured(screen_[i])) {
          ++unmeasured;
          cost += budget.cost(screen_[i], !all_full_);
        }
      // A budget that cannot pay for this screen and one guess after it explores from the model
      // it has instead: its best guess combines the best one-knob changes.
      if (unmeasured > 0 && !affords_exploring(budget, cost + budget.brief_point_s))
        screen_.resize(before);
    } else {
      return false;
    }
    ++screens_;
    return true;
  }

  // Before anything is measured, a budget that cannot pay for screening a point and measuring
  // one in full: the stages would measure nothing (issue 84: a minute on a small embedding model,
  // "a point needs ~25 s", and no point ran).
  bool starved(const BudgetView& budget) const {
    if (all_full_ || stage_ != SearchStage::kScreen || spent_screen_ + spent_explore_ + spent_final_)
      return false;
    return !affords_exploring(budget, cheapest_unmeasured(budget));
  }

  // What a starved budget does instead: the points it can pay for, each measured once in full,
  // the cheapest first (the guides' starts first among equals): it crowns the best of what fits
  // rather than nothing, and says it was cut.
  std::optional<Proposal> next_lean(const BudgetView& budget) {
    lean_ = true;
    cut_ = true;
    std::optional<std::size_t> best;
    double best_cost = 0;
    const auto consider = [&](std::size_t i) {
      if (measured(i) || out_[i] || proposed_[i]) return;
      const double c = budget.cost(i, false);
      if (budget.remaining_s < c || (best && c >= best_cost)) return;
      best = i;
      best_cost = c;
    };
    for (std::size_t i : screen_) consider(i);
    for (std::size_t i = 0; i < assignments_.size(); ++i) consider(i);
    if (!best) return std::nullopt;
    ++spent_final_;
    proposed_[*best] = true;
    out_[*best] = true;
    return Proposal{*best, SearchStage::kFinal, false};
  }

  double cheapest_unmeasured(const BudgetView& budget) const {
    double cheapest = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < assignments_.size(); ++i)
      if (!measured(i)) cheapest = std::min(cheapest, budget.cost(i, !all_full_));
    return cheapest;
  }

  // The point nearest `target`, then its one-knob changes in random order, to screen.
  void add_screen_around(const std::vector<std::size_t>& target) {
    std::size_t centre = 0;
    for (std::size_t i = 1; i < assignments_.size(); ++i)
      if (distance(assignments_[i], target) < distance(assignments_[centre], target)) centre = i;
    std::vector<std::size_t> singles;
    for (std::size_t i = 0; i < assignments_.size(); ++i)
      if (distance(assignments_[i], assignments_[centre]) == 1) singles.push_back(i);
    std::shuffle(singles.begin(), singles.end(), rng_);
    screen_.push_back(centre);
    screen_.insert(screen_.end(), singles.begin(), singles.end());
  }

  // The guides' advice where the knobs give some, elsewhere the value that screened best.
  std::vector<std::size_t> expert_start() const {
    std::vector<std::size_t> start(expert_.size(), 0);
    for (std::size_t a = 0; a < expert_.size(); ++a) {
      if (expert_[a]) {
        start[a] = *expert_[a];
        continue;
      }
      std::optional<double> best;
      for (std::size_t i = 0; i < assignments_.size(); ++i)
        if (brief_[i] && (!best || *brief_[i] > *best)) {
          best = brief_[i];
          start[a] = assignments_[i][a];
        }
    }
    return start;
  }

  Proposal propose(std::size_t point, SearchStage stage) {
    (stage == SearchStage::kScreen ? spent_screen_ : spent_explore_) += 1;
    proposed_[point] = true;
    out_[point] = true;
    return Proposal{point, stage, !all_full_};
  }

  std::size_t ok_points() const {
    std::size_t n = 0;
    for (const auto& s : brief_) n += s.has_value();
    return n;
  }

  // Exploring goes on only while `seconds` more of brief points still leave room to measure the
  // finalists in full: those measured in full already are paid for, but a new point that beats
  // them needs one more (confirm() ranks full measurements first), at about the cost of the
  // dearest finalist not yet measured in full.
  bool affords_exploring(const BudgetView& budget, double seconds) const {
    double finals = 0;
    if (!all_full_) {
      std::size_t unpaid = std::min(options_.finalists, ok_points() + 1);
      double dearest = budget.full_point_s;
      for (std::size_t i : finalists()) {
        if (measured_full_[i]) unpaid -= unpaid > 1;
        else dearest = std::max(dearest, budget.cost(i, false));
      }
      finals = static_cast<double>(unpaid) * dearest;
    }
    return budget.remaining_s >= seconds + finals;
  }

  void cut(SearchStage stage) {
    cut_ = true;
    resume_ = stage;
    stage_ = SearchStage::kFinal;
  }

  // The untried point the model ranks best per second of cost (a point that compiles for a
  // minute must promise more than one that does not), when it is within the tolerance of the
  // leader; without costs, simply the best. Where no guess promises a gain (a budget explores on
  // without a tolerance), the best guess among those that cost what any point costs, and a dear
  // one only once none is left: bench 23's explore took three compiles that way.
  std::optional<std::size_t> best_guess(const BudgetView& budget) {
    std::vector<std::vector<std::size_t>> xs;
    std::vector<double> ys;
    for (std::size_t i = 0; i < assignments_.size(); ++i)
      if (brief_[i] && *brief_[i] > 0) {
        xs.push_back(assignments_[i]);
        ys.push_back(*brief_[i]);
      }
    if (xs.empty()) return std::nullopt;
    model_->fit(xs, ys);
    const auto failing = failing_values();
    const auto fails = [&](std::size_t point) { return has_failing_value(point, failing); };
    std::optional<std::size_t> best, best_plain, by_rate;
    double best_score = 0, plain_score = 0, best_rate = 0;
    for (std::size_t i = 0; i < assignments_.size(); ++i) {
      if (measured(i) || out_[i] || fails(i)) continue;
      const double cost = budget.cost(i, !all_full_);
      if (!affords_exploring(budget, cost)) {
        priced_out_ = true;
        continue;
      }
      const double p = model_->predict(assignments_[i]);
      if (!best || p > best_score) {
        best = i;
        best_score = p;
      }
      const bool dear = cost > kDearPoints * budget.brief_point_s;
      if (!dear && (!best_plain || p > plain_score)) {
        best_plain = i;
        plain_score = p;
      }
      if (leader_ && *leader_ > 0) {
        const double rate = guess_gain_per_s(p, *leader_, cost, dear);
        if (rate > 0 && (!by_rate || rate > best_rate)) {
          by_rate = i;
          best_rate = rate;
        }
      }
    }
    if (!best || !leader_ || best_score < *leader_ * (1 - options_.tolerance)) return std::nullopt;
    if (by_rate) return by_rate;
    return best_plain ? best_plain : best;
  }

  // When the model guesses nothing near the leader, the leader's own one-knob changes, the
  // model's favourites first: a step of coordinate climbing. The model's guesses for pairs it has
  // never seen are shrunk towards the average, so a leader found in the second screen (bf16
  // autocast at batch 32, eager) can have a better neighbour (batch 8) that no guess reaches.
  // Bounded by the patience, like the guesses.
  std::optional<std::size_t> next_climb(const BudgetView& budget) {
    std::optional<std::size_t> leader;
    for (std::size_t i = 0; i < brief_.size(); ++i)
      if (brief_[i] && (!leader || *brief_[i] > *brief_[*leader])) leader = i;
    if (!leader) return std::nullopt;
    if (climbed_from_ != leader) {
      climbed_from_ = leader;
      climb_.clear();
      const auto failing = failing_values();
      for (std::size_t i = 0; i < assignments_.size(); ++i) {
        if (measured(i) || out_[i] || distance(assignments_[i], assignments_[*leader]) != 1) continue;
        if (!affords_exploring(budget, budget.cost(i, !all_full_))) {
          priced_out_ = true;
          continue;
        }
        if (!has_failing_value(i, failing)) climb_.push_back(i);
      }
      std::stable_sort(climb_.begin(), climb_.end(), [&](std::size_t a, std::size_t b) {
        return model_->predict(assignments_[a]) / std::max(1e-3, budget.cost(a, !all_full_)) >
               model_->predict(assignments_[b]) / std::max(1e-3, budget.cost(b, !all_full_));
      });
    }
    while (!climb_.empty() && (measured(climb_.front()) || out_[climb_.front()]))
      climb_.erase(climb_.begin());
    if (climb_.empty()) return std::nullopt;
    const std::size_t next = climb_.front();
    climb_.erase(climb_.begin());
    return next;
  }

  bool has_failing_value(std::size_t point, const std::vector<std::vector<bool>>& failing) const {
    for (std::size_t a = 0; a < failing.size(); ++a)
      if (failing[a][assignments_[point][a]]) return true;
    return false;
  }

  // Per axis and value: every point measured with it failed or was guarded out (mode=train fails
  // the accuracy guard wherever it goes). The model has no score to learn that from, so it would
  // rank such points like their neighbours and spend the budget finding out again.
  std::vector<std::vector<bool>> failing_values() const {
    std::vector<std::vector<bool>> failing, passed;
    for (const std::size_t n : levels_) {
      failing.emplace_back(n, false);
      passed.emplace_back(n, false);
    }
    for (std::size_t i = 0; i < assignments_.size(); ++i) {
      if (!measured(i)) continue;
      const bool ok = brief_[i].has_value() || full_[i].has_value();
      for (std::size_t a = 0; a < levels_.size(); ++a) {
        failing[a][assignments_[i][a]] = true;  // tried; cleared below where one passed
        passed[a][assignments_[i][a]] = passed[a][assignments_[i][a]] || ok;
      }
    }
    for (std::size_t a = 0; a < levels_.size(); ++a)
      for (std::size_t v = 0; v < levels_[a]; ++v) failing[a][v] = failing[a][v] && !passed[a][v];
    return failing;
  }

  // The best briefly measured points, best first; one stopped behind the leader is not one (a
  // grad=on point stopped so was measured in full for 40 s of bench 23's 5 minutes), nor, where
  // asked (a budget), one out of the leader's reach after the runner-up (whose lead over the
  // rest is always checked).
  std::vector<std::size_t> finalists() const {
    std::vector<std::size_t> ok;
    for (std::size_t i = 0; i < brief_.size(); ++i)
      if (brief_[i] && !behind_[i]) ok.push_back(i);
    std::stable_sort(ok.begin(), ok.end(),
                     [&](std::size_t a, std::size_t b) { return *brief_[a] > *brief_[b]; });
    if (ok.size() > options_.finalists) ok.resize(options_.finalists);
    if (options_.finals_in_reach && !ok.empty() && leader_) {
      const double reach = *leader_ / kOutOfReach;
      while (ok.size() > 2 && *brief_[ok.back()] < reach) ok.pop_back();
    }
    return ok;
  }

  SearchOptions options_;
  std::vector<std::vector<std::size_t>> assignments_;
  std::vector<std::size_t> levels_;  // values per axis
  std::optional<ScoreModel> model_;
  std::vector<std::optional<double>> brief_, full_;
  std::vector<bool> measured_brief_, measured_full_;
  std::vector<std::optional<std::size_t>> expert_;  // per axis
  std::mt19937_64 rng_;
  static constexpr double kScreenShare = 0.25;  // of the budget left, the most a screen point costs
  static constexpr double kDearPoints = 3;       // brief points' worth, the least a dear one costs
  std::vector<std::size_t> origin_;  // the origin's assignment
  // The guides' starts (the first starts_ entries), then the screens around a centre each.
  std::vector<std::size_t> screen_;
  std::size_t starts_ = 0;
  std::size_t screen_next_ = 0;  // where the current screen begins
  std::size_t screens_ = 0;      // screens added after the first
  std::vector<bool> proposed_;
  std::vector<bool> out_;  // proposed and not yet recorded (a cluster measures several at once)
  std::vector<bool> behind_;  // stopped clearly behind the leader
  bool skipped_ = false;  // a screened point the budget could not pay for
  bool resumed_ = false;  // a cut stage went on after the finals
  bool priced_out_ = false;  // the last guess left points out for their cost
  SearchStage stage_ = SearchStage::kScreen;
  std::optional<double> leader_;
  std::optional<std::size_t> climbed_from_;  // the leader whose neighbours are in climb_
  std::vector<std::size_t> climb_;
  std::size_t since_better_ = 0;
  bool all_full_ = false;
  bool lean_ = false;  // a starved budget measures what it can pay for in full (next_lean)
  bool cut_ = false;
  std::optional<SearchStage> resume_;  // the stage the budget cut, while it is cut
  std::size_t spent_screen_ = 0, spent_explore_ = 0, spent_final_ = 0;
};

}  // namespace

std::unique_ptr<Search> make_smart_search(const Space& space, const SearchOptions& options) {
  return std::make_unique<SmartSearch>(space, options);
}

}  // namespace torchperf
