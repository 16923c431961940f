#include "torchperf/analysis/pareto.h"

#include <algorithm>
#include <cmath>

namespace torchperf {

std::vector<std::size_t> pareto_front(const std::vector<ParetoInput>& points, bool maximize_x,
                                      bool maximize_y) {
  // Orient both axes so that larger is better, then sweep in decreasing x keeping rising y.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (std::isfinite(points[i].x) && std::isfinite(points[i].y)) order.push_back(i);
  const auto x = [&](std::size_t i) { return maximize_x ? points[i].x : -points[i].x; };
  const auto y = [&](std::size_t i) { return maximize_y ? points[i].y : -points[i].y; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (x(a) != x(b)) return x(a) > x(b);
    return y(a) > y(b);
  });
  std::vector<std::size_t> front;
  double best_y = -INFINITY;
  for (std::size_t i : order) {
    if (y(i) > best_y) {
      front.push_back(i);
      best_y = y(i);
    }
  }
  std::sort(front.begin(), front.end(),
            [&](std::size_t a, std::size_t b) { return points[a].x < points[b].x; });
  return front;
}

}  // namespace torchperf
