#include "torchperf/sweep/search.h"

#include <algorithm>
#include <stdexcept>

#include "searches.h"
#include "torchperf/error.h"

namespace torchperf {

std::string to_string(SearchKind kind) {
  return kind == SearchKind::kSmart ? "smart" : "exhaustive";
}

SearchKind search_kind_from_string(const std::string& name) {
  if (name == "smart") return SearchKind::kSmart;
  if (name == "exhaustive") return SearchKind::kExhaustive;
  throw UsageError("--search '" + name + "': expected smart or exhaustive");
}

std::string to_string(SearchStage stage) {
  switch (stage) {
    case SearchStage::kScreen: return "screen";
    case SearchStage::kExplore: return "explore";
    case SearchStage::kFinal: return "final";
    case SearchStage::kSweep: return "sweep";
  }
  return "sweep";
}

SearchStage search_stage_from_string(const std::string& name) {
  for (auto s : {SearchStage::kScreen, SearchStage::kExplore, SearchStage::kFinal,
                 SearchStage::kSweep})
    if (to_string(s) == name) return s;
  throw std::invalid_argument("not a search stage: " + name);
}

std::vector<std::vector<std::size_t>> point_assignments(const Space& space) {
  std::vector<std::vector<std::size_t>> out;
  for (const auto& p : space.points) {
    std::vector<std::size_t> a;
    for (const auto& axis : space.axes) {
      // A point of the other runtime leaves out an axis that is not its own (graph=compile
      // for a C++ point): it counts at the axis's baseline, the value it runs without it.
      const auto value = p.config.get(axis.knob).value_or(axis.baseline);
      auto it = std::find(axis.values.begin(), axis.values.end(), value);
      if (it == axis.values.end() && !p.config.get(axis.knob)) it = axis.values.begin();
      if (it == axis.values.end())
        throw std::logic_error("point " + p.key + " has no value of axis " + axis.knob);
      a.push_back(static_cast<std::size_t>(it - axis.values.begin()));
    }
    out.push_back(std::move(a));
  }
  return out;
}

namespace {

// Today's cube: the origin, the one-knob changes, then the rest in seeded random order, each at
// the full time, until the space or the budget runs out.
class ExhaustiveSearch final : public Search {
 public:
  ExhaustiveSearch(const Space& space, const SearchOptions& options)
      : order_(informative_order(space, options.seed)), done_(space.points.size(), false) {}

  std::optional<Proposal> next(const BudgetView& budget) override {
    while (next_ < order_.size() && done_[order_[next_]]) ++next_;
    if (next_ == order_.size()) return std::nullopt;
    if (budget.remaining_s < budget.full_point_s) {
      cut_ = true;
      return std::nullopt;
    }
    ++proposed_;
    return Proposal{order_[next_++], SearchStage::kSweep, false};
  }

  void record(std::size_t point, bool, std::optional<double>) override { done_.at(point) = true; }

  std::string spent() const override { return "sweep " + std::to_string(proposed_); }
  bool cut_by_budget() const override { return cut_; }
  bool proposes_ahead() const override { return true; }  // its order is fixed

 private:
  std::vector<std::size_t> order_;
  std::vector<bool> done_;
  std::size_t next_ = 0, proposed_ = 0;
  bool cut_ = false;
};

}  // namespace

std::unique_ptr<Search> make_exhaustive_search(const Space& space, const SearchOptions& options) {
  return std::make_unique<ExhaustiveSearch>(space, options);
}

std::unique_ptr<Search> make_search(SearchKind kind, const Space& space,
                                    const SearchOptions& options) {
  return kind == SearchKind::kSmart ? make_smart_search(space, options)
                                    : make_exhaustive_search(space, options);
}

}  // namespace torchperf
