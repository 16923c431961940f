// The terminal summary of a tune run: the winner with its head-to-head evidence, the top ten, the
// one-knob changes that helped and hurt, and what failed or was guarded out, and why.
#pragma once

#include <string>

#include "torchperf/sweep/tune_runner.h"

namespace torchperf {

std::string format_tune(const TuneResult& result);

}  // namespace torchperf
