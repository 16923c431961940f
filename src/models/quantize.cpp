#include "torchperf/models/quantize.h"

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/script.h>

#include <limits>
#include <map>

#include "torchperf/error.h"
#include "torchperf/models/graph_rewrites.h"

namespace torchperf {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// One rewritten call: the module attributes it read and the packed weight it now reads.
struct LinearSite {
  std::string weight, bias, packed;  // bias "" when the call had none
};

// Per output channel, symmetric int8: the scale PyTorch's PerChannelMinMaxObserver(qint8,
// per_channel_symmetric) computes, max |w| over the channel / 127.5 (at least float eps), zero
// point 0. oneDNN and QNNPACK refuse weights with a non-zero zero point.
c10::IValue pack_weight(const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  const at::Tensor w = weight.detach().to(at::kFloat).contiguous();
  const at::Tensor scales = (w.abs().amax({1}) / 127.5)
                                .clamp_min(std::numeric_limits<float>::epsilon())
                                .to(at::kDouble);
  const at::Tensor zero_points = at::zeros({w.size(0)}, at::kLong);
  const at::Tensor q = at::quantize_per_channel(w, scales, zero_points, 0, at::kQInt8);
  static const auto prepack =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  torch::jit::Stack stack{q, bias ? c10::IValue(bias->detach().to(at::kFloat)) : c10::IValue()};
  prepack.callBoxed(&stack);
  return stack.at(0);
}

// A module attribute read in this graph as `self.NAME`, or "" when v is something else.
std::string self_attribute(const Value* v, const Value* self) {
  const Node* n = v->node();
  if (n->kind() != c10::prim::GetAttr || n->input(0) != self) return "";
  return n->s(c10::attr::name);
}

c10::optional<at::Tensor> tensor_attribute(const torch::jit::Module& m, const std::string& name) {
  if (name.empty() || !m.hasattr(name)) return c10::nullopt;
  const c10::IValue v = m.attr(name);
  if (!v.isTensor()) return c10::nullopt;
  return v.toTensor();
}

// Rewrites the graph's eligible linear calls, taking the packed type from this instance; the
// other instances of the module's type share the graph and only get their own packed weights.
std::vector<LinearSite> rewrite(Graph& graph, torch::jit::Module& m, bool reduce_range,
                                QuantizedLayers& summary) {
  std::vector<LinearSite> sites;
  std::vector<Node*> calls;
  for_each_node(graph.block(), [&](Node* n) {
    if (n->kind() == c10::aten::linear) calls.push_back(n);
  });
  Value* self = graph.inputs().at(0);
  for (Node* call : calls) {
    LinearSite site;
    site.weight = self_attribute(call->input(1), self);
    const auto weight = tensor_attribute(m, site.weight);
    const std::string where = m.type()->name() ? m.type()->name()->name() : "a module";
    if (!weight || weight->dim() != 2 || !at::isFloatingType(weight->scalar_type())) {
      summary.skipped.push_back("a linear call in " + where +
                                " whose weight is not a 2-D floating attribute of its module");
      continue;
    }
    const Value* bias_value = call->input(2);
    const bool no_bias = bias_value->type()->kind() == c10::TypeKind::NoneType ||
                         (bias_value->node()->kind() == c10::prim::Constant &&
                          bias_value->node()->output()->type()->kind() == c10::TypeKind::NoneType);
    if (!no_bias) {
      site.bias = self_attribute(bias_value, self);
      if (site.bias.empty() ||
          !(m.attr(site.bias).isTensor() || m.attr(site.bias).isNone())) {
        summary.skipped.push_back("a linear call in " + where + " whose bias is computed");
        continue;
      }
    }
    site.packed = "_torchperf_int8_" + site.weight;
    const auto bias = site.bias.empty() ? c10::nullopt : tensor_attribute(m, site.bias);
    const c10::IValue packed = pack_weight(*weight, bias);
    m.register_attribute(site.packed, packed.type(), packed);

    torch::jit::WithInsertPoint here(call);
    Value* packed_value = graph.insertGetAttr(self, site.packed);
    Node* q = graph.create(c10::Symbol::fromQualString("quantized::linear_dynamic"),
                           {call->input(0), packed_value, graph.insertConstant(reduce_range)});
    graph.insertNode(q);
    q->output()->setType(call->output()->type());
    call->output()->replaceAllUsesWith(q->output());
    call->destroy();
    sites.push_back(site);
  }
  torch::jit::EliminateDeadCode(graph.block());
  return sites;
}

}  // namespace

QuantizedLayers quantize_linear_dynamic(torch::jit::Module& module) {
  if (at::globalContext().qEngine() == at::QEngine::NoQEngine)
    throw ConfigError("int8-dynamic: this LibTorch has no quantized engine");
  // Activations in 7 bits, as PyTorch's quantize_dynamic and quantize_dynamic_jit call it on
  // every engine (FBGEMM accumulates pairs of int8 products in 16 bits without VNNI): the same
  // numbers as a Python user gets.
  const bool reduce_range = true;
  QuantizedLayers summary;
  std::map<const Graph*, std::vector<LinearSite>> sites;
  for (torch::jit::Module m : module.modules()) {
    for (const auto& method : m.get_methods()) {
      const auto graph = method.graph();
      auto found = sites.find(graph.get());
      if (found == sites.end()) {
        auto rewritten = rewrite(*graph, m, reduce_range, summary);
        summary.linear += static_cast<int>(rewritten.size());
        sites.emplace(graph.get(), std::move(rewritten));
        continue;
      }
      for (const LinearSite& site : found->second) {  // another instance of the same type
        const auto bias = site.bias.empty() ? c10::nullopt : tensor_attribute(m, site.bias);
        m.register_attribute(site.packed, m.type()->getAttribute(site.packed),
                             pack_weight(*tensor_attribute(m, site.weight), bias));
        ++summary.linear;
      }
    }
  }
  if (summary.linear == 0)
    throw ConfigError("int8-dynamic: the model has no Linear layer with a weight attribute" +
                      (summary.skipped.empty() ? std::string() : " (" + summary.skipped.front() + ")"));
  return summary;
}

}  // namespace torchperf
