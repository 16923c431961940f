// --config as bench and serve read it: a configuration string, or a FILE.json that tune or report
// wrote, whose model, inputs and device apply where the command line gives none.
#pragma once

#include <optional>
#include <string>

#include "torchperf/bench/bench_options.h"
#include "torchperf/config/configuration_file.h"

namespace torchperf::cli {

// Sets options.config and, from a file, the model, input spec and device left unset and, where
// the model is the file's, its named dimensions, the caller's module and the calibration; returns
// the file read (none for a configuration string).
std::optional<ConfigurationFile> apply_config_argument(const std::string& argument,
                                                       BenchOptions& options);

// A tune's folder given as the model (`serve RUN`): its winner.json becomes the --config and the
// model is the file's (returns ""); any other model is returned as given. UsageError for a folder
// without a winner.json, or with --config given too.
std::string config_argument_of(const std::string& model, std::string& config);

// A served model answers requests: eval mode (a batch's statistics must not leak between the
// requests it holds) and no autograd, unless the configuration says otherwise.
void default_to_serving(Configuration& config, const std::string& model);

}  // namespace torchperf::cli
