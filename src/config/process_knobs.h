// The worker knobs (allocator, omp_wait, omp_bind, aten_isa, onednn_isa, mkl_isa, interop_threads):
// chosen when a process starts, through its environment, and confirmed from inside it. Internal to config: the registry
// lists them with the others (knob_registry.cpp).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "torchperf/config/knob.h"

namespace torchperf {

// A knob's values when they do not depend on the workload.
inline std::vector<std::string> fixed(std::initializer_list<const char*> values) {
  return std::vector<std::string>(values.begin(), values.end());
}

// A knob swept only when --space names it.
inline bool never_swept(const WorkloadTraits&) { return false; }

// A knob read only by `train`: its plan() sets up the loader and the step.
inline Knob training_only(const std::string& name, const std::string& description) {
  Knob k;
  k.name = name;
  k.description = description;
  k.inference = false;
  k.training = true;
  return k;
}

std::vector<Knob> worker_knobs();

}  // namespace torchperf
