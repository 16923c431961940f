#include "search_landscape.h"

#include <cmath>
#include <random>

#include "support/test_support.h"

namespace torchperf {
namespace {

std::string value(const Space& s, std::size_t point, const std::string& knob) {
  return s.points[point].config.get(knob).value_or("");
}

}  // namespace

Space landscape_space() {
  return build_space(testing::image_model_traits(), {{"batch", {"1", "8", "32"}},
                                     {"threads", {"1", "2"}},
                                     // train is named: a default inference sweep leaves it out
                                     {"mode", {"eval", "train"}},
                                     {"grad", {"on", "no_grad", "inference"}},
                                     {"precision", {"fp32", "bf16-autocast"}},
                                     {"format", {"contiguous", "channels_last"}},
                                     {"graph", {"eager", "frozen-opt"}}});
}

double landscape_score(const Space& s, std::size_t i) {
  double v = 10;
  if (value(s, i, "batch") == "8") v *= 1.6;
  if (value(s, i, "batch") == "32") v *= 1.8;
  if (value(s, i, "threads") == "2") v *= 1.5;
  if (value(s, i, "grad") != "on") v *= 1.1;
  if (value(s, i, "graph") == "frozen-opt") v *= 1.2;
  const bool bf16 = value(s, i, "precision") == "bf16-autocast";
  const bool cl = value(s, i, "format") == "channels_last";
  if (bf16)
    v *= (cl && value(s, i, "graph") == "frozen-opt") ? 2.0 : 0.7;
  else if (cl)
    v *= 0.95;
  return v;
}

std::size_t landscape_best(const Space& s) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < s.points.size(); ++i)
    if (landscape_score(s, i) > landscape_score(s, best)) best = i;
  return best;
}

Trail drive(Search& search, const Space& s, double noise, BudgetView budget, double brief_s,
            double full_s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, noise);
  Trail r;
  double best = -1;
  while (auto p = search.next(budget)) {
    r.proposals.push_back(*p);
    const double score = landscape_score(s, p->point) * std::exp(p->brief ? n(rng) : n(rng) / 3);
    search.record(p->point, p->brief, score);
    budget.remaining_s -= budget.point_s ? budget.point_s(p->point, p->brief)
                                         : p->brief ? brief_s : full_s;
    if (!p->brief && score > best) {
      best = score;
      r.best = p->point;
    }
  }
  return r;
}

}  // namespace torchperf
