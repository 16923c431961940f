#include "config_argument.h"

#include <filesystem>

#include <fmt/format.h>

#include "torchperf/analysis/run_results.h"
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

std::string serve_best_cpp_point(const std::string& argument, Configuration& config) {
  const auto family = config.get("runtime");
  if (!family || !names_configuration_file(argument) ||
      runtime_for(*family, config.get("graph").value_or(""), WorkloadTraits{}).worker() !=
          RuntimeWorker::kPython)
    return "";
  const ConfigurationFile file = read_configuration_file(argument);
  if (file.source.empty() || !std::filesystem::exists(file.source)) return "";
  const RunResults run = load_run(file.source);
  // Full measurements decide over brief ones, as tune's confirmation ranks them.
  const PointResult *best = nullptr, *top = nullptr;
  for (const auto& p : run.points) {
    if (p.status != PointStatus::kOk) continue;
    const auto better = [&](const PointResult* than) {
      return !than || (than->brief != p.brief ? than->brief : p.score > than->score);
    };
    if (better(top)) top = &p;
    if (runtime_of_key(p.key).worker() == RuntimeWorker::kCpp && better(best)) best = &p;
  }
  if (!best) return "";
  const std::string winner = config.to_string();
  config = Configuration::parse(best->key);
  return fmt::format(
      "the tune's winner ({}) runs in the Python worker, which serve cannot host: serving the "
      "tune's best C++ point, {} ({:.3g}x the tune's best point in its sweep); run the winner "
      "itself in Python with torchperf.load(RUN).apply(model)",
      winner, best->key, top && top->score > 0 ? best->score / top->score : 0.0);
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
