#include "config_argument.h"

#include <filesystem>

#include <fmt/format.h>

#include "torchperf/analysis/run_results.h"
#include "torchperf/config/configuration_file.h"
#include "torchperf/error.h"
#include "torchperf/models/exported_program.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf::cli {

std::optional<ConfigurationFile> apply_config_argument(const std::string& argument,
                                                       BenchOptions& options) {
  if (!names_configuration_file(argument)) {
    options.config = Configuration::parse(argument);
    return std::nullopt;
  }
  const ConfigurationFile file = read_configuration_file(argument);
  options.config = file.configuration;
  // The tune's model and how it was fed, where the command line names another model or none.
  const bool same_model = options.model.empty() || options.model == file.model;
  if (options.model.empty()) options.model = file.model;
  if (options.input_spec.empty() && options.inputs_file.empty())
    options.input_spec = file.input_spec;
  if (options.device == "auto" && !file.device.empty()) options.device = file.device;
  if (!same_model) return file;
  if (options.dims.empty()) options.dims = file.dims;
  if (options.python_module.empty()) options.python_module = file.python_module;
  if (options.calibration_file.empty()) options.calibration_file = file.calibration_file;
  return file;
}

std::string config_argument_of(const std::string& model, std::string& config) {
  std::error_code ec;
  if (model.empty() || !std::filesystem::is_directory(model, ec)) return model;
  const auto file = std::filesystem::path(model) / "winner.json";
  if (!std::filesystem::exists(file, ec))
    throw UsageError("'" + model + "' is a folder without a winner.json: expected a model file, "
                     "builtin:NAME, or a tune's folder (its --out, or a result saved with "
                     "result.save) that crowned a winner");
  if (!config.empty())
    throw UsageError("'" + model + "' is a tune's folder, whose winner.json is the configuration: "
                     "leave --config out (or give the model and --config FILE.json)");
  config = file.string();
  return "";
}

void default_to_serving(Configuration& config, const std::string& model) {
  const Runtime& runtime =
      runtime_for(config.get("runtime").value_or(runtime_families().front()),
                  config.get("graph").value_or(""), WorkloadTraits{});
  // A torch.export program in C++ is served as exported: no training flag or autograd to set.
  if (runtime.worker() == RuntimeWorker::kCpp && model.rfind("builtin:", 0) != 0) {
    try {
      if (archive_kind(model) == ArchiveKind::kExportedProgram) return;
    } catch (const Error&) {
      // Not a whole archive: opening the model says what it is.
    }
  }
  // The runtime says which it takes: the Python runtime runs the module in eval mode already
  // (its training flag is no knob there), and an engine's converted graph has neither.
  const WorkloadTraits view = runtime.view(WorkloadTraits{});
  const auto takes = [&](const std::string& knob, const std::string& value) {
    const auto a = runtime.applies(knob, value, view);
    return !a || a->applies;
  };
  if (!config.get("mode") && takes("mode", "eval")) config.set("mode", "eval");
  if (!config.get("grad") && takes("grad", "no_grad")) config.set("grad", "no_grad");
}

}  // namespace torchperf::cli
