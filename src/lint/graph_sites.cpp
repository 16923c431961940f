#include "graph_sites.h"

#include <vector>

namespace torchperf::lint_detail {
namespace {

// Source lines inside PyTorch's own files say where nn.Conv2d calls conv2d, not where the
// user's model calls the layer.
bool in_torch_itself(const std::string& file) {
  return file.find("/torch/") != std::string::npos || file.rfind("torch/", 0) == 0;
}

// A loaded model's nodes point into the code TorchScript serialized (code/__torch__/….py);
// the model's own file and line are in its debug records, where torch.jit.save kept them.
torch::jit::SourceRange original(const torch::jit::SourceRange& range) {
  if (!range.source()) return range;
  if (auto generated = range.findSourceRangeThatGenerated()) return *generated;
  return range;
}

std::string describe(const torch::jit::SourceRange& range) {
  const auto flc = range.file_line_col();
  if (!flc) return "";
  const std::string& file = std::get<0>(*flc);
  const auto slash = file.find_last_of('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" +
         std::to_string(std::get<1>(*flc));
}

}  // namespace

std::string module_path(const torch::jit::Node* node) {
  const auto stack = node->callstack();
  if (!stack) return "";
  std::string path;
  for (const auto& entry : (*stack)->vec()) {
    const auto& instance = std::get<2>(entry);
    // "SELF" marks a module calling its own method (nn.Conv2d's _conv_forward).
    if (!instance || instance->instance_name().empty() || instance->instance_name() == "SELF")
      continue;
    path += (path.empty() ? "" : ".") + instance->instance_name();
  }
  return path;
}

std::string source_line(const torch::jit::Node* node) {
  // Innermost first: the node itself, then the call sites that led to it, outward.
  std::vector<torch::jit::SourceRange> ranges{original(node->sourceRange())};
  if (const auto stack = node->callstack()) {
    const auto entries = (*stack)->vec();
    for (auto it = entries.rbegin(); it != entries.rend(); ++it)
      ranges.push_back(original(std::get<1>(*it)));
  }
  for (const auto& range : ranges) {
    const auto flc = range.file_line_col();
    if (flc && !in_torch_itself(std::get<0>(*flc))) return describe(range);
  }
  return "";
}

}  // namespace torchperf::lint_detail
