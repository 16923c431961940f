// Several ranks of one job (a folder of traces): each rank's mean step over the steps all ranks
// share, its communication and the part of it overlapped by computation, and the slowest rank.
// Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/trace/trace_analysis.h"

namespace torchperf {

struct RankRow {
  std::size_t trace = 0;  // its index in the list compared
  int rank = -1;
  std::string path;
  std::size_t steps = 0;                 // annotated steps in the trace
  double step = 0;                       // ns, mean over the shared steps
  double kernel = 0, communication = 0;  // ns per step (exposed communication: the category)
  double overlap = -1;                   // communication kernels overlapped by computation, or -1
  double utilization = 0;
};

struct RankComparison {
  std::vector<RankRow> ranks;              // in rank order
  std::size_t slowest = 0;                 // index into ranks
  double spread = 0;                       // slowest step / fastest step
  std::vector<std::int64_t> shared_steps;  // step numbers every rank has
  std::string warning;  // ranks with different steps, in one line ("" when they agree)
};

// Ranks with different step numbers are compared on the steps they share (warning set), and
// with `strict` that is a TraceError. A trace without a rank in distributedInfo takes its
// position in the list.
RankComparison compare_ranks(const std::vector<TraceAnalysis>& ranks, bool strict);

}  // namespace torchperf
