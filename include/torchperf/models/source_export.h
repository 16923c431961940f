// A user's model exported from Python source (--from-python MODULE:CALLABLE): the Python side
// imports it, puts it in eval mode and saves a torch.export program with a dynamic batch, so
// that a user never writes export code. The program is then a model like any other .pt2.
#pragma once

#include <string>
#include <vector>

#include "torchperf/feed/input_spec.h"
#include "torchperf/process/command_run.h"

namespace torchperf {

struct SourceExport {
  std::string callable;   // MODULE:CALLABLE, imported from the working folder
  InputSpec inputs;       // the example (made at batch 2: export specialises a size of 1)
  std::vector<std::string> dims;  // --dim NAME=DISTRIBUTION: named dimensions exported dynamic
  bool static_batch = false;
  std::string out_path;   // the .pt2 written
};

// Throws UsageError for a malformed MODULE:CALLABLE, CompileError when it cannot be imported,
// called or exported, WorkloadError when the model rejects the example inputs.
void export_from_python(const SourceExport& request, const CommandLimits& limits);

// What torch.compile's tracer (torch._dynamo.explain) makes of the model: its graphs and the
// breaks between them, each with the user's line it happened on.
struct GraphBreak {
  std::string reason;  // Dynamo's, e.g. "Unsupported Tensor.item() call with …"
  std::string hint;    // Dynamo's advice, when it gives one
  std::string where;  // "netmod.py:12", or "" when Dynamo kept no user frame
};
struct GraphBreakReport {
  int graphs = 0;
  int graph_breaks = 0;
  std::vector<GraphBreak> breaks;  // the first 20
};

// Traces request.callable as torch.compile would, exporting nothing (out_path is ignored).
// Throws as export_from_python does.
GraphBreakReport explain_from_python(const SourceExport& request, const CommandLimits& limits);

}  // namespace torchperf
