#include "torchperf/lint/graph_breaks.h"

#include <fmt/format.h>

namespace torchperf {

std::vector<Finding> graph_break_findings(const GraphBreakReport& report) {
  std::vector<Finding> out;
  if (report.graph_breaks == 0) {
    Finding f;
    f.rule = "single-graph";
    f.severity = Severity::kInfo;
    f.module = "forward";
    f.evidence = fmt::format("torch._dynamo.explain traced the model as {} graph with no break",
                             report.graphs);
    f.fix = "nothing to change: torch.compile (runtime=python, graph=compile) sees it whole";
    out.push_back(f);
    return out;
  }
  for (std::size_t i = 0; i < report.breaks.size(); ++i) {
    const GraphBreak& b = report.breaks[i];
    Finding f;
    f.rule = "graph-break";
    f.severity = Severity::kWarning;
    f.module = "forward";  // Dynamo traces the call, not a submodule
    f.source = b.where;
    // Each break returns to Python between compiled pieces, and Inductor cannot fuse across it.
    f.evidence = fmt::format("break {} of {} ({} graphs): {}", i + 1, report.graph_breaks,
                             report.graphs, b.reason);
    f.fix = b.hint.empty() ? "rewrite this line so that Dynamo can trace it (no data-dependent "
                             "Python control flow, .item(), print or untraceable calls in forward)"
                           : b.hint;
    out.push_back(f);
  }
  return out;
}

}  // namespace torchperf
