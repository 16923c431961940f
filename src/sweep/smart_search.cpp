#include <algorithm>
#include <cmath>
#include <random>

#include "searches.h"
#include "torchperf/sweep/score_model.h"

// The smart search. Why these stages: the one-knob changes from the origin give every main effect
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

class SmartSearch final : public Search {
 public:
  SmartSearch(const Space& space, const SearchOptions& options)
      : options_(options),
        assignments_(point_assignments(space)),
        brief_(space.points.size()),
        full_(space.points.size()),
        measured_brief_(space.points.size(), false),
        measured_full_(space.points.size(), false) {
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
    rng_.seed(options_.seed);
    add_screen_around(origin);
    if (screen_.empty()) screen_.push_back(0);
  }

  std::optional<Proposal> next(const BudgetView& budget) override {
    if (stage_ == SearchStage::kScreen) {
      while (screen_next_ < screen_.size() && measured(screen_[screen_next_])) ++screen_next_;
      if (screen_next_ == screen_.size() && !second_screen_) {
        second_screen_ = true;
        const std::size_t before = screen_.size();
        add_screen_around(expert_start());
        std::size_t unmeasured = 0;
        for (std::size_t i = before; i < screen_.size(); ++i) unmeasured += !measured(screen_[i]);
        // A budget that cannot pay for the second screen and one guess after it explores from the
        // first screen's model instead: its best guess combines the best one-knob changes.
        if (!affords_exploring(budget, unmeasured + 1)) screen_.resize(before);
        while (screen_next_ < screen_.size() && measured(screen_[screen_next_])) ++screen_next_;
      }
      if (screen_next_ < screen_.size()) {
        if (affords_exploring(budget))
          return propose(screen_[screen_next_++], SearchStage::kScreen);
        cut(SearchStage::kScreen);  // what was screened goes straight to the finals
      } else {
        stage_ = SearchStage::kExplore;
        since_better_ = 0;
      }
    }
    if (stage_ == SearchStage::kExplore) {
      if (since_better_ < options_.patience) {
        std::optional<std::size_t> guess = best_guess();
        if (!guess) guess = next_climb();
        if (guess) {
          if (affords_exploring(budget)) return propose(*guess, SearchStage::kExplore);
          cut(SearchStage::kExplore);
        }
      }
      stage_ = SearchStage::kFinal;
    }
    if (all_full_) return std::nullopt;
    for (std::size_t i : finalists()) {
      if (measured_full_[i]) continue;
      if (budget.remaining_s < budget.full_point_s) {
        cut_ = true;
        return std::nullopt;
      }
      ++spent_final_;
      return Proposal{i, SearchStage::kFinal, false};
    }
    // The finalists are measured. A stage the budget cut goes on when the estimates, now from
    // measured full points, leave room again: a budget is not left unspent while points remain.
    if (cut_ && resume_ && affords_exploring(budget)) {
      stage_ = *resume_;
      resume_.reset();
      cut_ = false;
      return next(budget);  // proposes, or ends with the stage done (no second cut: it affords)
    }
    return std::nullopt;
  }

  void record(std::size_t point, bool brief, std::optional<double> score) override {
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

  bool cut_by_budget() const override { return cut_; }

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
    return Proposal{point, stage, !all_full_};
  }

  std::size_t ok_points() const {
    std::size_t n = 0;
    for (const auto& s : brief_) n += s.has_value();
    return n;
  }

  // Exploring goes on only while `points` more brief points still leave room to measure the
  // finalists in full: those measured in full already are paid for, but a new point that beats
  // them needs one more (confirm() ranks full measurements first).
  bool affords_exploring(const BudgetView& budget, std::size_t points = 1) const {
    std::size_t unpaid = std::min(options_.finalists, ok_points() + 1);
    for (std::size_t i : finalists()) unpaid -= unpaid > 1 && measured_full_[i];
    const double finals = all_full_ ? 0 : static_cast<double>(unpaid) * budget.full_point_s;
    const double point = all_full_ ? budget.full_point_s : budget.brief_point_s;
    return budget.remaining_s >= static_cast<double>(points) * point + finals;
  }

  void cut(SearchStage stage) {
    cut_ = true;
    resume_ = stage;
    stage_ = SearchStage::kFinal;
  }

  // The untried point the model ranks best, when it is within the tolerance of the leader.
  std::optional<std::size_t> best_guess() {
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
    std::optional<std::size_t> best;
    double best_score = 0;
    for (std::size_t i = 0; i < assignments_.size(); ++i) {
      if (measured(i) || fails(i)) continue;
      const double p = model_->predict(assignments_[i]);
      if (!best || p > best_score) {
        best = i;
        best_score = p;
      }
    }
    if (!best || !leader_ || best_score < *leader_ * (1 - options_.tolerance)) return std::nullopt;
    return best;
  }

  // When the model guesses nothing near the leader, the leader's own one-knob changes, the
  // model's favourites first: a step of coordinate climbing. The model's guesses for pairs it has
  // never seen are shrunk towards the average, so a leader found in the second screen (bf16
  // autocast at batch 32, eager) can have a better neighbour (batch 8) that no guess reaches.
  // Bounded by the patience, like the guesses.
  std::optional<std::size_t> next_climb() {
    std::optional<std::size_t> leader;
    for (std::size_t i = 0; i < brief_.size(); ++i)
      if (brief_[i] && (!leader || *brief_[i] > *brief_[*leader])) leader = i;
    if (!leader) return std::nullopt;
    if (climbed_from_ != leader) {
      climbed_from_ = leader;
      climb_.clear();
      const auto failing = failing_values();
      for (std::size_t i = 0; i < assignments_.size(); ++i) {
        if (measured(i) || distance(assignments_[i], assignments_[*leader]) != 1) continue;
        if (!has_failing_value(i, failing)) climb_.push_back(i);
      }
      std::stable_sort(climb_.begin(), climb_.end(), [&](std::size_t a, std::size_t b) {
        return model_->predict(assignments_[a]) > model_->predict(assignments_[b]);
      });
    }
    while (!climb_.empty() && measured(climb_.front())) climb_.erase(climb_.begin());
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

  // The best briefly measured points, best first.
  std::vector<std::size_t> finalists() const {
    std::vector<std::size_t> ok;
    for (std::size_t i = 0; i < brief_.size(); ++i)
      if (brief_[i]) ok.push_back(i);
    std::stable_sort(ok.begin(), ok.end(),
                     [&](std::size_t a, std::size_t b) { return *brief_[a] > *brief_[b]; });
    if (ok.size() > options_.finalists) ok.resize(options_.finalists);
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
  std::vector<std::size_t> screen_;  // around the origin, then around the expert start
  std::size_t screen_next_ = 0;
  bool second_screen_ = false;
  SearchStage stage_ = SearchStage::kScreen;
  std::optional<double> leader_;
  std::optional<std::size_t> climbed_from_;  // the leader whose neighbours are in climb_
  std::vector<std::size_t> climb_;
  std::size_t since_better_ = 0;
  bool all_full_ = false;
  bool cut_ = false;
  std::optional<SearchStage> resume_;  // the stage the budget cut, while it is cut
  std::size_t spent_screen_ = 0, spent_explore_ = 0, spent_final_ = 0;
};

}  // namespace

std::unique_ptr<Search> make_smart_search(const Space& space, const SearchOptions& options) {
  return std::make_unique<SmartSearch>(space, options);
}

}  // namespace torchperf
