// A synthetic landscape for testing tune's searches without workers: a space of about a hundred
// points, a score with main effects and a three-way interaction like a CPU's, and a driver that
// runs a search to its end on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/sweep/search.h"

namespace torchperf {

// batch 1,8,32 x threads 1,2 x grad x precision fp32,bf16-autocast x format x graph eager,frozen-opt.
Space landscape_space();
// batch and threads help alone, bf16 hurts alone and wins only with a frozen graph and
// channels_last together.
double landscape_score(const Space& space, std::size_t point);
std::size_t landscape_best(const Space& space);

struct Trail {
  std::vector<Proposal> proposals;
  std::size_t best = 0;  // the best point measured in full
};
// Runs a search to its end: each proposal scored with multiplicative log-normal noise (`noise`
// for brief points, a third of it for full ones) and its cost taken from the budget.
Trail drive(Search& search, const Space& space, double noise, BudgetView budget, double brief_s,
            double full_s, std::uint64_t seed = 1);

}  // namespace torchperf
