// A Chrome trace (JSON; opens in Perfetto and chrome://tracing) of some training steps: each
// step and its phases on one row, the operators LibTorch's profiler (Kineto) recorded on the
// threads that ran them, on a wait / warm-up / active schedule like torch.profiler.schedule.
#pragma once

#include <cstddef>
#include <string>

namespace torchperf {

class TrainingSession;

struct TraceSchedule {
  std::size_t wait = 1;    // steps run without the profiler
  std::size_t warmup = 1;  // profiled, events dropped (the profiler's own start-up)
  std::size_t active = 3;  // profiled and written
};

struct TraceSummary {
  std::size_t steps = 0;
  std::size_t phase_events = 0;
  std::size_t operator_events = 0;
};

// Runs wait + warmup + active steps of the session and writes the trace; UsageError when the
// file cannot be written.
TraceSummary write_trace(TrainingSession& session, const TraceSchedule& schedule,
                         const std::string& path);

}  // namespace torchperf
