// --config as bench and serve read it: a configuration string, or a FILE.json that tune or report
// wrote, whose model, inputs and device apply where the command line gives none.
#pragma once

#include <string>

#include "torchperf/bench/bench_options.h"

namespace torchperf::cli {

// Sets options.config (and from a file, the model, input spec and device left unset).
void apply_config_argument(const std::string& argument, BenchOptions& options);

// serve hosts LibTorch: a tune's winner measured in the Python worker (torch.compile, an engine,
// int8 by PT2E), given as the tune's FILE.json, is replaced by that tune's best C++ point. Returns
// the line that says so, or "" when the configuration is kept (default_to_serving then refuses a
// Python-worker configuration that no tune's file came with).
std::string serve_best_cpp_point(const std::string& argument, Configuration& config);

// A served model answers requests: eval mode (a batch's statistics must not leak between the
// requests it holds) and no autograd, unless the configuration says otherwise.
void default_to_serving(Configuration& config, const std::string& model);

}  // namespace torchperf::cli
