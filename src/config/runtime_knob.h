// The runtime knob (cpp | python) and what the python runtime makes of the other knobs: its own
// graph values (eager, torch.compile), fewer precisions, and every knob it does not apply shown
// as not applicable with the reason. Internal to config: the registry applies it (knob_registry.cpp).
#pragma once

#include "torchperf/config/knob.h"

namespace torchperf {

Knob runtime_knob();

// Wraps an inference knob so that under WorkloadTraits::python_runtime it answers for the
// Python runtime; under cpp it answers as before.
void adapt_to_python_runtime(Knob& knob);

}  // namespace torchperf
