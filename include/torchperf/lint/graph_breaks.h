// lint's findings for a model from Python source: the graph breaks torch.compile's tracer
// (Dynamo) meets, each at the user's line, with Dynamo's reason and advice. Torch-free.
#pragma once

#include <vector>

#include "torchperf/lint/finding.h"
#include "torchperf/models/source_export.h"

namespace torchperf {

// One "graph-break" warning per break (at most 20), or one info finding saying the model
// traces as a single graph.
std::vector<Finding> graph_break_findings(const GraphBreakReport& report);

}  // namespace torchperf
