// A machine class: what makes two machines' timings comparable (CPU model and ISA, cores, GPU and
// driver, torch build). A tune ranks points only within one class; every point's journal record
// names the class it was measured on.
#pragma once

#include <string>

#include "torchperf/measure/environment.h"

namespace torchperf {

// One line naming the class, which is also its identity: "Intel Xeon … | 2 of 2 cores | avx2
// avx512f … | no GPU | torch 2.13.0+cpu". Hostname, load and governor are not part of it.
std::string machine_class_of(const Environment& environment);

// The first field that differs between two classes, for the plan: "cores 2 of 2 here, 16 of 16
// there"; empty when they are the same.
std::string machine_class_difference(const std::string& ours, const std::string& theirs);

}  // namespace torchperf
