#include "torchperf/models/graph_rewrites.h"

#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <map>
#include <vector>

namespace torchperf {
void for_each_node(torch::jit::Block* block, const std::function<void(torch::jit::Node*)>& visit) {
  for (auto* n : block->nodes()) {
    visit(n);
    for (auto* sub : n->blocks()) for_each_node(sub, visit);
  }
}

bool is_convolution(const torch::jit::Node* n) {
  const std::string op = n->kind().toQualString();
  return op == "aten::_convolution" || op == "aten::conv1d" || op == "aten::conv2d" ||
         op == "aten::conv3d" || op == "aten::convolution";
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

bool is_conv_bias_before_batch_norm(const torch::jit::Node* n) {
  if (!is_convolution(n) || n->inputs().size() < 3) return false;
  if (n->input(2)->type()->kind() == c10::TypeKind::NoneType) return false;
  const auto& uses = n->output()->uses();
  return uses.size() == 1 && uses[0].offset == 0 && uses[0].user->kind() == c10::aten::batch_norm;
}

int count_conv_bias_before_batch_norm(const torch::jit::Module& module) {
  if (!module.find_method("forward")) return 0;
  auto graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  int count = 0;
  for_each_node(graph->block(), [&](torch::jit::Node* n) { count += is_conv_bias_before_batch_norm(n); });
  return count;
}

int fold_conv_bias_into_batch_norm(torch::jit::Module& module) {
  auto graph = module.get_method("forward").graph();
  torch::jit::Inline(*graph);
  struct Site {
    torch::jit::Node* conv;
    at::Tensor bias, running_mean;
  };
  std::vector<Site> sites;
  std::map<const void*, int> uses;  // tensor storage -> sites using it: shared ones are left alone
  for_each_node(graph->block(), [&](torch::jit::Node* n) {
    if (!is_conv_bias_before_batch_norm(n)) return;
    const auto* bn = n->output()->uses()[0].user;
    const auto bias = known_value(n->input(2), module);
    const auto mean = bn->inputs().size() > 3 ? known_value(bn->input(3), module) : c10::nullopt;
    if (!bias || !bias->isTensor() || !mean || !mean->isTensor()) return;
    sites.push_back({n, bias->toTensor(), mean->toTensor()});
    ++uses[sites.back().bias.data_ptr()];
    ++uses[sites.back().running_mean.data_ptr()];
  });
  int folded = 0;
  for (auto& s : sites) {
    if (uses[s.bias.data_ptr()] != 1 || uses[s.running_mean.data_ptr()] != 1) continue;
    {
      c10::NoGradGuard no_grad;
      s.running_mean.sub_(s.bias.to(s.running_mean.scalar_type()));
    }
    torch::jit::WithInsertPoint here(s.conv);
    s.conv->replaceInput(2, graph->insertConstant(c10::IValue()));
    ++folded;
  }
  torch::jit::EliminateDeadCode(graph);
  return folded;
}

}  // namespace torchperf
