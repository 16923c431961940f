// Reading an inlined TorchScript graph for lint: where a node came from (module path, the user's
// source line). The value a graph value holds is models/graph_rewrites.h's known_value.
#pragma once

#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <string>

namespace torchperf::lint_detail {

// "layer1.0.conv1": the module instances the node was inlined through; "" for the top level.
std::string module_path(const torch::jit::Node* node);

// "file.py:LINE" of the innermost place in the model's own code that led to the node: call
// sites inside torch's own files (torch/nn/…) are skipped for the user's line that called them.
// "" when TorchScript kept no file name (a module built in C++).
std::string source_line(const torch::jit::Node* node);

}  // namespace torchperf::lint_detail
