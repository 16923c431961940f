// The runtime knob (cpp | python), and the wrapper through which each runtime decides what the
// other knobs mean for it (runtime/runtime.h): their values, baseline, expert values and
// applicability, with the reason. Internal to config: the registry applies it (knob_registry.cpp).
#pragma once

#include "torchperf/config/knob.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf {

Knob runtime_knob();

// The runtime whose view `traits` are; traits not yet viewed are the model's own C++ runtime's.
const Runtime& viewing_runtime(const WorkloadTraits& traits);

// Wraps a knob so that the runtime of the traits it is asked with answers first; where the
// runtime leaves the knob to itself, the knob's own declaration answers.
void let_runtime_decide(Knob& knob);

}  // namespace torchperf
