// A model of a point's score fitted to the points measured so far: log(score) as each knob's
// main effect plus each pair's interaction, ridge-regularised (interactions shrunk harder) so
// that a dozen points already give a sensible ranking of the untried ones. The smart search
// proposes the point it ranks best.
#pragma once

#include <cstddef>
#include <vector>

namespace torchperf {

class ScoreModel {
 public:
  // levels[a]: how many values axis a has.
  explicit ScoreModel(std::vector<std::size_t> levels);

  // assignments[i][a]: the value index of point i on axis a; scores must be positive.
  void fit(const std::vector<std::vector<std::size_t>>& assignments,
           const std::vector<double>& scores);
  // The predicted score (not its log); 1 before any fit.
  double predict(const std::vector<std::size_t>& assignment) const;

 private:
  std::vector<std::size_t> features(const std::vector<std::size_t>& assignment) const;

  std::vector<std::size_t> levels_;
  std::vector<std::size_t> main_offset_;               // per axis
  std::vector<std::vector<std::size_t>> pair_offset_;  // [a][b], a < b
  std::size_t size_ = 1;                               // features, the intercept included
  std::size_t main_end_ = 1;                           // [1, main_end_): main effects
  std::vector<double> weights_;
};

}  // namespace torchperf
