// The worker knobs (allocator, omp_wait, omp_bind, aten_isa, onednn_isa, mkl_isa, interop_threads):
// chosen when a process starts, through its environment, and confirmed from inside it. Internal to config: the registry
// lists them with the others (knob_registry.cpp).
#pragma once

#include <vector>

#include "torchperf/config/knob.h"

namespace torchperf {

std::vector<Knob> worker_knobs();

}  // namespace torchperf
