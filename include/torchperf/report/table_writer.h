// Human-readable tables of bench results for a terminal. Reads the same records as the JSON writer.
#pragma once

#include <string>

#include "torchperf/bench/measurement.h"

namespace torchperf {

std::string format_environment(const Environment& env);
std::string format_measurement(const Measurement& m);
std::string format_comparison(const Comparison& c);
// Environment, then the measurement or comparison, then the verdict line.
std::string format_result(const BenchResult& result);

std::string format_bytes(std::int64_t bytes);

}  // namespace torchperf
