#include "python_source.h"

#include <iostream>

#include "torchperf/error.h"
#include "torchperf/models/source_export.h"

namespace torchperf::cli {

void add_python_module_flags(CLI::App& cmd, std::string& calibration_file,
                             std::string& python_module, const std::string& whose) {
  cmd.add_option("--calibration", calibration_file,
                 "Real samples int8-static is calibrated on (torch.save of a tuple of tensors, "
                 "the samples first, the model's inputs otherwise); default: the run's inputs" +
                     whose);
  cmd.add_option("--python-module", python_module,
                 "The program's nn.Module itself, saved by the Python API (torchperf.bench "
                 "writes it): the python runtime runs it instead of the program's module" +
                     whose);
}

void add_python_source_flags(CLI::App& cmd, PythonSourceFlags& flags) {
  cmd.add_option("--from-python", flags.callable,
                 "MODULE:CALLABLE: export this nn.Module (a class or a function that returns one, "
                 "importable from here) with torch.export in the .venv (eval, dynamic batch; needs "
                 "--input) and measure the program");
  cmd.add_flag("--static-batch", flags.static_batch,
               "--from-python: export with a static batch (of 2) instead of a dynamic one");
  cmd.add_option("--compile-timeout", flags.compile_timeout_s,
                 "Seconds one AOTInductor compile (or export) may take before it is stopped")
      ->default_val(1800.0);
}

SourceExport python_source_request(const std::string& callable, const std::string& model,
                                   const std::string& input_spec, const std::string& what) {
  if (!model.empty())
    throw UsageError("--from-python " + callable + " and the model '" + model +
                     "' were both given: pass one");
  if (input_spec.empty())
    throw UsageError("--from-python " + callable +
                     ": expected --input SPEC (e.g. --input 3x224x224): the example " + what);
  SourceExport request;
  request.callable = callable;
  request.inputs = parse_input_spec(input_spec);
  return request;
}

std::string export_python_source(const PythonSourceFlags& flags, const std::string& model,
                                 const std::string& input_spec, const std::vector<std::string>& dims, const std::string& out_path,
                                 bool quiet) {
  SourceExport request = python_source_request(flags.callable, model, input_spec, "to export with");
  request.static_batch = flags.static_batch;
  request.dims = dims;
  request.out_path = out_path;
  if (!quiet) std::cerr << "torchperf: exporting " << flags.callable << " with torch.export to " << out_path << "\n";
  export_from_python(request, within(flags.compile_timeout_s));
  return out_path;
}

}  // namespace torchperf::cli
