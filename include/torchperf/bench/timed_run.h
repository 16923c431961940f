// The exact callable bench times for a prepared workload: call-scope knobs entered around every
// forward call, process-scope knobs around every block, the device synchronised at block ends.
// Public so that the harness-overhead benchmark times the same code path.
#pragma once

#include "torchperf/config/configuration.h"
#include "torchperf/measure/sampler.h"
#include "torchperf/models/workload.h"

namespace torchperf {

// The workload and configuration must outlive the returned run.
TimedRun make_timed_run(Workload& workload, const ResolvedConfiguration& config);

}  // namespace torchperf
