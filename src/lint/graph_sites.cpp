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

c10::optional<c10::IValue> known_value(const torch::jit::Value* value,
                                       const torch::jit::Module& module) {
  if (auto constant = torch::jit::toIValue(value)) return constant;
  std::vector<std::string> names;
  const torch::jit::Value* v = value;
  while (v->node()->kind() == c10::prim::GetAttr) {
    names.push_back(v->node()->s(c10::attr::name));
    v = v->node()->input(0);
  }
  const auto* graph = value->owningGraph();
  if (names.empty() || graph->inputs().empty() || v != graph->inputs()[0]) return c10::nullopt;
  c10::IValue current = module._ivalue();
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!current.isObject()) return c10::nullopt;
    const auto object = current.toObject();
    if (!object->type()->hasAttribute(*it)) return c10::nullopt;
    current = object->getAttr(*it);
  }
  return current;
}

bool is_none(const torch::jit::Value* value) {
  return value->type()->kind() == c10::TypeKind::NoneType;
}

void for_each_node(torch::jit::Block* block, const std::function<void(torch::jit::Node*)>& visit) {
  for (auto* node : block->nodes()) {
    visit(node);
    for (auto* sub : node->blocks()) for_each_node(sub, visit);
  }
}

}  // namespace torchperf::lint_detail
