#include "torchperf/sweep/score_model.h"

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>

namespace torchperf {
namespace {

// Ridge penalties on the log scale: a main effect is believed from a couple of points, an
// interaction only once a few points show it (one point moves it by two thirds of its gap).
constexpr double kMainPenalty = 0.05;
constexpr double kPairPenalty = 0.5;

}  // namespace

ScoreModel::ScoreModel(std::vector<std::size_t> levels) : levels_(std::move(levels)) {
  for (std::size_t a = 0; a < levels_.size(); ++a) {
    main_offset_.push_back(size_);
    size_ += levels_[a];
  }
  main_end_ = size_;
  pair_offset_.assign(levels_.size(), std::vector<std::size_t>(levels_.size(), 0));
  for (std::size_t a = 0; a < levels_.size(); ++a)
    for (std::size_t b = a + 1; b < levels_.size(); ++b) {
      pair_offset_[a][b] = size_;
      size_ += levels_[a] * levels_[b];
    }
  weights_.assign(size_, 0.0);
}

std::vector<std::size_t> ScoreModel::features(const std::vector<std::size_t>& assignment) const {
  if (assignment.size() != levels_.size())
    throw std::invalid_argument("ScoreModel: an assignment of the wrong length");
  std::vector<std::size_t> f{0};
  for (std::size_t a = 0; a < levels_.size(); ++a) f.push_back(main_offset_[a] + assignment[a]);
  for (std::size_t a = 0; a < levels_.size(); ++a)
    for (std::size_t b = a + 1; b < levels_.size(); ++b)
      f.push_back(pair_offset_[a][b] + assignment[a] * levels_[b] + assignment[b]);
  return f;
}

void ScoreModel::fit(const std::vector<std::vector<std::size_t>>& assignments,
                     const std::vector<double>& scores) {
  if (assignments.size() != scores.size())
    throw std::invalid_argument("ScoreModel: as many scores as assignments expected");
  weights_.assign(size_, 0.0);
  if (scores.empty()) return;
  // Centre on the mean log score, so that the penalties pull towards "as good as the average".
  double mean = 0;
  for (double s : scores) mean += std::log(s);
  mean /= static_cast<double>(scores.size());
  const auto n = static_cast<std::int64_t>(size_);
  at::Tensor gram = at::zeros({n, n}, at::kDouble);
  at::Tensor rhs = at::zeros({n}, at::kDouble);
  auto g = gram.accessor<double, 2>();
  auto r = rhs.accessor<double, 1>();
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const auto f = features(assignments[i]);
    const double y = std::log(scores[i]) - mean;
    for (std::size_t p : f) {
      r[static_cast<std::int64_t>(p)] += y;
      for (std::size_t q : f) g[static_cast<std::int64_t>(p)][static_cast<std::int64_t>(q)] += 1;
    }
  }
  for (std::int64_t p = 0; p < n; ++p)
    g[p][p] += p == 0 ? 1e-9 : (static_cast<std::size_t>(p) < main_end_ ? kMainPenalty : kPairPenalty);
  const at::Tensor w = at::linalg_solve(gram, rhs);
  auto wa = w.accessor<double, 1>();
  for (std::int64_t p = 0; p < n; ++p) weights_[static_cast<std::size_t>(p)] = wa[p];
  weights_[0] += mean;
}

double ScoreModel::predict(const std::vector<std::size_t>& assignment) const {
  double log_score = 0;
  for (std::size_t p : features(assignment)) log_score += weights_[p];
  return std::exp(log_score);
}

}  // namespace torchperf
