// The worker knobs (allocator, blas, omp_wait, omp_bind, interop_threads): chosen when a process
// starts, through its environment, and confirmed from inside it. Internal to config: the registry
// lists them with the others (knob_registry.cpp).
#pragma once

#include <vector>

#include "torchperf/config/knob.h"

namespace torchperf {

std::vector<Knob> worker_knobs();

}  // namespace torchperf
