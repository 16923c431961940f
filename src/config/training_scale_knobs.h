// The knobs of training at scale: gradient accumulation, DDP's settings (with train --nproc N)
// and activation checkpointing. Internal to config: the registry lists them with the others
// (knob_registry.cpp); their values reach the Python step through the training plan.
#pragma once

#include <vector>

#include "torchperf/config/knob.h"

namespace torchperf {

std::vector<Knob> training_scale_knobs();

}  // namespace torchperf
