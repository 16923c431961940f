#include "config_argument.h"

#include "torchperf/config/configuration_file.h"

namespace torchperf::cli {

void apply_config_argument(const std::string& argument, BenchOptions& options) {
  if (!names_configuration_file(argument)) {
    options.config = Configuration::parse(argument);
    return;
  }
  const ConfigurationFile file = read_configuration_file(argument);
  options.config = file.configuration;
  if (options.model.empty()) options.model = file.model;
  if (options.input_spec.empty() && options.inputs_file.empty())
    options.input_spec = file.input_spec;
  if (options.device == "auto" && !file.device.empty()) options.device = file.device;
}

void default_to_serving(Configuration& config) {
  if (!config.get("mode")) config.set("mode", "eval");
  if (!config.get("grad")) config.set("grad", "no_grad");
}

}  // namespace torchperf::cli
