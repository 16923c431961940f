// Pareto fronts: the points no other point beats on both of two objectives at once.
#pragma once

#include <cstddef>
#include <vector>

namespace torchperf {

struct ParetoInput {
  double x = 0, y = 0;  // NaN: the point takes no part
};

// Indices of the non-dominated points, sorted by x. maximize_x / maximize_y say which way is
// better on each axis; a point equal to another on both axes is kept once (the first).
std::vector<std::size_t> pareto_front(const std::vector<ParetoInput>& points, bool maximize_x,
                                      bool maximize_y);

}  // namespace torchperf
