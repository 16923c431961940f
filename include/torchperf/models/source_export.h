// A user's model exported from Python source (--from-python MODULE:CALLABLE): the Python side
// imports it, puts it in eval mode and saves a torch.export program with a dynamic batch, so
// that a user never writes export code. The program is then a model like any other .pt2.
#pragma once

#include <string>

#include "torchperf/models/input_spec.h"
#include "torchperf/process/command_run.h"

namespace torchperf {

struct SourceExport {
  std::string callable;   // MODULE:CALLABLE, imported from the working folder
  InputSpec inputs;       // the example (made at batch 2: export specialises a size of 1)
  bool static_batch = false;
  std::string out_path;   // the .pt2 written
};

// Throws UsageError for a malformed MODULE:CALLABLE, CompileError when it cannot be imported,
// called or exported, WorkloadError when the model rejects the example inputs.
void export_from_python(const SourceExport& request, const CommandLimits& limits);

}  // namespace torchperf
