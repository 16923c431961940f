#include "torchperf/bench/bench_options.h"

#include <cmath>
#include <sstream>

#include "torchperf/error.h"
#include "torchperf/feed/inputs.h"

namespace torchperf {

void validate(const BenchOptions& options) {
  if (options.model.empty())
    throw UsageError("a model is required: a TorchScript file or builtin:NAME");
  if (!(options.time_s > 0) || !std::isfinite(options.time_s)) {
    std::ostringstream got;
    got << options.time_s;
    throw UsageError("--time: expected a positive number of seconds, got " + got.str());
  }
  if (options.time_s > 1e6)
    throw UsageError("--time: expected at most 1e6 seconds (11.6 days), got " +
                     std::to_string(options.time_s));
  if (!(options.target_relative_ci > 0 && options.target_relative_ci < 1))
    throw UsageError("--target-ci: expected a fraction between 0 and 1, e.g. 0.01 for ±1%");
  if (options.memory_cap_bytes < 0) throw UsageError("--memory-cap: expected a size > 0");
  if (!options.input_spec.empty() && !options.inputs_file.empty())
    throw UsageError("--input and --inputs-file both given; expected one way to feed the model");
}

bool varies_in_size(const BenchOptions& options) {
  return !options.dims.empty() ||
         (!options.inputs_file.empty() && holds_input_samples(options.inputs_file));
}

}  // namespace torchperf
