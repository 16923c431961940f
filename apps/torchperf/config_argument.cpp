#include "config_argument.h"

#include "torchperf/config/configuration_file.h"
#include "torchperf/error.h"
#include "torchperf/models/exported_program.h"
#include "torchperf/runtime/runtime.h"

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

void default_to_serving(Configuration& config, const std::string& model) {
  // serve hosts LibTorch in its own process: a configuration measured in the Python worker (torch
  // .compile, an engine) is not one it can run, and is said before anything loads.
  if (const auto family = config.get("runtime")) {
    const Runtime& runtime = runtime_for(*family, config.get("graph").value_or(""), WorkloadTraits{});
    if (runtime.worker() == RuntimeWorker::kPython)
      throw ConfigError("runtime=" + *family + ": serve runs the model in C++ (TorchScript or "
                        "AOTInductor), and " + runtime.label() + " runs in the Python worker; "
                        "serve the tune's best C++ point (its report's \"best of each runtime\"), "
                        "or run the winner in Python with torchperf.load(RUN).apply(model)");
  }
  // A torch.export program is served as exported: it has no training flag or autograd to set.
  bool program = false;
  if (model.rfind("builtin:", 0) != 0) {
    try {
      program = archive_kind(model) == ArchiveKind::kExportedProgram;
    } catch (const Error&) {
      // Not a whole archive: opening the model says what it is.
    }
  }
  if (program) return;
  if (!config.get("mode")) config.set("mode", "eval");
  if (!config.get("grad")) config.set("grad", "no_grad");
}

}  // namespace torchperf::cli
