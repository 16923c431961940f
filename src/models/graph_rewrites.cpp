#include "torchperf/models/graph_rewrites.h"

#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
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

namespace {

// The object and attribute name a chain of attribute reads from the graph's module ends at.
struct AttributeSlot {
  c10::intrusive_ptr<c10::ivalue::Object> object;
  std::string name;
};

c10::optional<AttributeSlot> attribute_slot(const torch::jit::Value* value,
                                            const torch::jit::Module& module) {
  std::vector<std::string> names;
  const torch::jit::Value* v = value;
  while (v->node()->kind() == c10::prim::GetAttr) {
    names.push_back(v->node()->s(c10::attr::name));
    v = v->node()->input(0);
  }
  const auto* graph = value->owningGraph();
  if (names.empty() || graph->inputs().empty() || v != graph->inputs()[0]) return c10::nullopt;
  auto object = module._ivalue();
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!object->type()->hasAttribute(*it)) return c10::nullopt;
    if (std::next(it) == names.rend()) return AttributeSlot{object, *it};
    const c10::IValue next = object->getAttr(*it);
    if (!next.isObject()) return c10::nullopt;
    object = next.toObject();
  }
  return c10::nullopt;
}

}  // namespace

c10::optional<c10::IValue> known_value(const torch::jit::Value* value,
                                       const torch::jit::Module& module) {
  if (auto constant = torch::jit::toIValue(value)) return constant;
  const auto slot = attribute_slot(value, module);
  if (!slot) return c10::nullopt;
  return slot->object->getAttr(slot->name);
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

namespace {

// Ops that map each feature to itself, with the same shape: what a padded feature holds after
// them does not reach the consumer, whose weights for it are zero. Finite at zero, so that zero
// times it stays zero.
bool is_per_feature(const torch::jit::Node* n) {
  static const std::set<std::string> ops = {
      "aten::relu",    "aten::relu_",       "aten::relu6",     "aten::gelu",
      "aten::tanh",    "aten::tanh_",       "aten::sigmoid",   "aten::sigmoid_",
      "aten::silu",    "aten::silu_",       "aten::hardswish", "aten::hardswish_",
      "aten::mish",    "aten::leaky_relu",  "aten::leaky_relu_", "aten::elu",
      "aten::elu_",    "aten::hardtanh",    "aten::hardtanh_", "aten::hardsigmoid",
      "aten::dropout", "aten::dropout_",    "aten::feature_dropout"};
  return ops.count(n->kind().toQualString()) > 0;
}

c10::optional<at::Tensor> known_tensor(const torch::jit::Value* v, const torch::jit::Module& m) {
  const auto value = known_value(v, m);
  if (!value || !value->isTensor()) return c10::nullopt;
  return value->toTensor();
}

bool has_bias(const torch::jit::Node* linear) {
  return linear->inputs().size() > 2 &&
         linear->input(2)->type()->kind() != c10::TypeKind::NoneType;
}

}  // namespace

std::vector<HiddenLinearSize> hidden_linear_sizes(torch::jit::Graph& graph,
                                                  const torch::jit::Module& module) {
  std::vector<HiddenLinearSize> sites;
  std::map<const void*, std::set<const torch::jit::Node*>> users;  // tensor attribute -> readers
  for_each_node(graph.block(), [&](torch::jit::Node* n) {
    for (const torch::jit::Value* in : n->inputs())
      if (in->node()->kind() == c10::prim::GetAttr &&
          in->type()->kind() == c10::TypeKind::TensorType)
        if (const auto t = known_tensor(in, module)) users[t->data_ptr()].insert(n);
    if (n->kind() != c10::aten::linear) return;
    const auto w = known_tensor(n->input(1), module);
    if (!w || w->dim() != 2) return;
    // A bias computed in forward cannot change its size.
    if (has_bias(n) && !known_tensor(n->input(2), module)) return;
    const torch::jit::Value* v = n->output();
    while (v->uses().size() == 1 && v->uses()[0].offset == 0) {
      torch::jit::Node* user = v->uses()[0].user;
      if (user->kind() == c10::aten::linear) {
        const auto w2 = known_tensor(user->input(1), module);
        if (w2 && w2->dim() == 2 && w2->size(1) == w->size(0))
          sites.push_back({n, user, w->size(0)});
        return;
      }
      if (!is_per_feature(user)) return;
      v = user->output();
    }
  });
  // A weight read anywhere else (tied weights, a matmul on it) keeps its shape, and so does one
  // that is not a module attribute (a frozen model's constants).
  const auto shared = [&](const torch::jit::Value* v) {
    const auto t = known_tensor(v, module);
    return !t || !attribute_slot(v, module) || users[t->data_ptr()].size() > 1;
  };
  sites.erase(std::remove_if(sites.begin(), sites.end(),
                             [&](const HiddenLinearSize& s) {
                               return shared(s.producer->input(1)) ||
                                      (has_bias(s.producer) && shared(s.producer->input(2))) ||
                                      shared(s.consumer->input(1));
                             }),
              sites.end());
  return sites;
}

std::vector<std::int64_t> hidden_linear_sizes(const torch::jit::Module& module) {
  if (!module.find_method("forward")) return {};
  auto graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  std::vector<std::int64_t> sizes;
  for (const auto& s : hidden_linear_sizes(*graph, module)) sizes.push_back(s.size);
  return sizes;
}

int pad_hidden_linear_sizes(torch::jit::Module& module, std::int64_t multiple) {
  if (multiple < 1) throw std::invalid_argument("pad_hidden_linear_sizes: multiple < 1");
  auto graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  c10::NoGradGuard no_grad;
  // Pads a weight or bias along one dimension, in the attribute that holds it. Read afresh: a
  // layer between two sites has its rows padded for one and its columns for the other.
  const auto pad = [&](const torch::jit::Value* v, std::int64_t dim, std::int64_t to) {
    const auto slot = attribute_slot(v, module);
    if (!slot) throw std::logic_error("pad_hidden_linear_sizes: a weight is not an attribute");
    const at::Tensor t = slot->object->getAttr(slot->name).toTensor();
    std::vector<std::int64_t> shape = t.sizes().vec();
    const std::int64_t from = shape[dim];
    shape[dim] = to;
    at::Tensor padded = at::zeros(shape, t.options());
    padded.narrow(dim, 0, from).copy_(t);
    padded.set_requires_grad(t.requires_grad());
    slot->object->setAttr(slot->name, padded);
  };
  int count = 0;
  for (const auto& s : hidden_linear_sizes(*graph, module)) {
    if (s.size % multiple == 0) continue;
    const std::int64_t to = (s.size + multiple - 1) / multiple * multiple;
    pad(s.producer->input(1), 0, to);
    if (has_bias(s.producer)) pad(s.producer->input(2), 0, to);
    pad(s.consumer->input(1), 1, to);
    ++count;
  }
  return count;
}

}  // namespace torchperf
