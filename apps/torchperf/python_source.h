// --from-python MODULE:CALLABLE for bench and tune: the flag, and the export it asks for (the
// Python side writes a torch.export program, which then is the model).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "torchperf/models/source_export.h"

namespace torchperf::cli {

struct PythonSourceFlags {
  std::string callable;  // MODULE:CALLABLE, empty when not given
  bool static_batch = false;
  double compile_timeout_s = 1800;
};

// Adds --from-python, --static-batch and --compile-timeout to a command.
void add_python_source_flags(CLI::App& cmd, PythonSourceFlags& flags);

// Adds --calibration and --python-module (what a Python API tune hands the core besides the
// program) to bench and serve; `whose` ends each flag's help ("" or where else it comes from).
void add_python_module_flags(CLI::App& cmd, std::string& calibration_file,
                             std::string& python_module, const std::string& whose);

// The request for MODULE:CALLABLE fed by input_spec. Throws UsageError when a model was given too
// or input_spec is empty ("what" says what the example is for: "to export with").
SourceExport python_source_request(const std::string& callable, const std::string& model,
                                   const std::string& input_spec, const std::string& what);

// Exports flags.callable fed by input_spec to out_path (a line on stderr says where, unless
// quiet) and returns out_path. Throws UsageError when --input is missing or a model was given too.
std::string export_python_source(const PythonSourceFlags& flags, const std::string& model,
                                 const std::string& input_spec, const std::vector<std::string>& dims, const std::string& out_path,
                                 bool quiet);

}  // namespace torchperf::cli
