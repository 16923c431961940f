// Applies a resolved configuration to a workload: the one-time transforms, then the scoped state
// entered around calls or blocks and undone in reverse order.
#pragma once

#include "torchperf/config/configuration.h"
#include "torchperf/config/knob.h"
#include "torchperf/models/workload.h"

namespace torchperf {

// Runs every applicable knob's prepare() in registry order.
void prepare_workload(const ResolvedConfiguration& config, Workload& workload);

// Enters every applicable knob of one scope; the returned Undo restores the previous state.
Undo enter_scope(const ResolvedConfiguration& config, const Workload& workload, KnobScope scope);

}  // namespace torchperf
