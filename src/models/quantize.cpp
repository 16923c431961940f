#include "torchperf/models/quantize.h"

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/script.h>

#include <limits>
#include <map>
#include <set>
#include <utility>

#include "torchperf/error.h"
#include "torchperf/models/graph_rewrites.h"

namespace torchperf {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// One rewritten call: the module attributes it read and the packed weights it now reads. A
// recurrent call (LSTM, GRU) read the list of its layers' weights, `weight`, and now reads a list
// of cell parameters.
struct LinearSite {
  std::string weight, bias, packed;  // bias "" when the call had none
  bool recurrent = false;
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

// The weights of an LSTM or GRU, as nn.LSTM keeps them (_flat_weights: per layer and direction,
// w_ih, w_hh, b_ih, b_hh), packed into the cell parameters aten::quantized_lstm/gru read: each
// weight quantized as a Linear's is, the biases kept in fp32, as PyTorch's quantize_dynamic does.
c10::IValue pack_cells(const c10::List<c10::IValue>& flat, bool reduce_range) {
  static const auto make = c10::Dispatcher::singleton().findSchemaOrThrow(
      "quantized::make_quantized_cell_params_dynamic", "");
  std::vector<c10::IValue> made;
  for (std::size_t i = 0; i + 4 <= flat.size(); i += 4) {
    const at::Tensor b_ih = flat.get(i + 2).toTensor().detach().to(at::kFloat);
    const at::Tensor b_hh = flat.get(i + 3).toTensor().detach().to(at::kFloat);
    torch::jit::Stack stack{pack_weight(flat.get(i).toTensor(), b_ih),
                            pack_weight(flat.get(i + 1).toTensor(), b_hh), b_ih, b_hh,
                            reduce_range};
    make.callBoxed(&stack);
    made.push_back(stack.at(0));
  }
  c10::impl::GenericList cells(made.at(0).type());  // the callers pass a non-empty list
  for (auto& cell : made) cells.push_back(std::move(cell));
  return cells;
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

// The cell parameters already packed, per module instance and attribute: nn.LSTM has a method
// per input form (a tensor, a packed sequence) and one weight list, packed once, counted once.
using PackedCells = std::set<std::pair<const c10::ivalue::Object*, std::string>>;

// Packs a module's weight list into its cell-parameter attribute, unless done already.
void pack_cells_once(torch::jit::Module& m, const LinearSite& site, bool reduce_range,
                     PackedCells& packed, QuantizedLayers& summary) {
  if (!packed.insert({m._ivalue().get(), site.packed}).second) return;
  const c10::IValue cells = pack_cells(m.attr(site.weight).toList(), reduce_range);
  if (m.type()->hasAttribute(site.packed))  // another instance of the type registered it
    m.register_attribute(site.packed, m.type()->getAttribute(site.packed), cells);
  else
    m.register_attribute(site.packed, cells.type(), cells);
  ++summary.recurrent;
}

// Where a recurrent call reads its weights: 2 for the padded-tensor form (input, hx, params),
// 3 for the packed-sequence one (data, batch_sizes, hx, params).
std::size_t params_index(const Node* call) {
  return call->schema().overload_name() == "data" ? 3 : 2;
}

// Rewrites aten::lstm / aten::gru whose weights are the module's own list (nn.LSTM, nn.GRU with
// biases, without projections) to their quantized forms.
void rewrite_recurrent(Graph& graph, torch::jit::Module& m, const std::vector<Node*>& calls,
                       bool reduce_range, std::vector<LinearSite>& sites, PackedCells& packed,
                       QuantizedLayers& summary) {
  Value* self = graph.inputs().at(0);
  const std::string where = m.type()->name() ? m.type()->name()->name() : "a module";
  for (Node* call : calls) {
    const bool lstm = call->kind() == c10::aten::lstm;
    const std::size_t at = params_index(call);
    LinearSite site;
    site.recurrent = true;
    site.weight = self_attribute(call->input(at), self);
    const c10::IValue flat = site.weight.empty() ? c10::IValue() : m.attr(site.weight);
    // has_biases: a constant or `self.bias`; the quantized cells need both biases.
    c10::optional<c10::IValue> biased = torch::jit::toIValue(call->input(at + 1));
    const std::string bias_flag = self_attribute(call->input(at + 1), self);
    if (!biased && !bias_flag.empty()) biased = m.attr(bias_flag);
    const bool has_biases = biased && biased->isBool() && biased->toBool();
    const bool projected = m.hasattr("proj_size") && m.attr("proj_size").isInt() &&
                           m.attr("proj_size").toInt() > 0;
    if (!flat.isList() || flat.toList().empty() || flat.toList().size() % 4 != 0 || projected ||
        !has_biases) {
      summary.skipped.push_back(std::string(lstm ? "an LSTM" : "a GRU") + " in " + where +
                                " without the weight list of a biased, unprojected layer");
      continue;
    }
    site.packed = "_torchperf_int8_" + site.weight;
    pack_cells_once(m, site, reduce_range, packed, summary);

    torch::jit::WithInsertPoint here(call);
    std::vector<torch::jit::NamedValue> args;
    for (std::size_t i = 0; i < call->inputs().size(); ++i)
      args.emplace_back(i == at ? graph.insertGetAttr(self, site.packed) : call->input(i));
    std::vector<torch::jit::NamedValue> kwargs;
    if (lstm) {  // quantized_gru tells dynamic cells from their type
      kwargs.emplace_back("dtype", graph.insertConstant(static_cast<int64_t>(at::kQInt8)));
      kwargs.emplace_back("use_dynamic", graph.insertConstant(true));
    }
    const auto op =
        c10::Symbol::fromQualString(lstm ? "aten::quantized_lstm" : "aten::quantized_gru");
    Value* result = graph.insert(op, args, kwargs);
    // A call with several outputs comes back packed in a tuple: its outputs take the old ones'
    // uses, and the tuple goes.
    Node* tuple = result->node();
    for (std::size_t i = 0; i < call->outputs().size(); ++i)
      call->output(i)->replaceAllUsesWith(tuple->input(i));
    tuple->destroy();
    call->destroy();
    sites.push_back(site);
  }
}

// Rewrites the graph's eligible linear and recurrent calls, taking the packed types from this
// instance; the other instances of the module's type share the graph and only get their own
// packed weights.
std::vector<LinearSite> rewrite(Graph& graph, torch::jit::Module& m, bool reduce_range,
                                PackedCells& packed, QuantizedLayers& summary) {
  std::vector<LinearSite> sites;
  std::vector<Node*> calls, recurrent;
  for_each_node(graph.block(), [&](Node* n) {
    if (n->kind() == c10::aten::linear) calls.push_back(n);
    if (n->kind() == c10::aten::lstm || n->kind() == c10::aten::gru) recurrent.push_back(n);
  });
  rewrite_recurrent(graph, m, recurrent, reduce_range, sites, packed, summary);
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
    ++summary.linear;
  }
  torch::jit::EliminateDeadCode(graph.block());
  return sites;
}

}  // namespace

QuantizedLayers quantize_linear_dynamic(torch::jit::Module& module) {
  if (at::globalContext().qEngine() == at::QEngine::NoQEngine)
    throw ConfigError("int8-dynamic: this LibTorch has no quantized engine");
  // Activations in 7 bits (Linear and recurrent cells alike), as PyTorch's quantize_dynamic and
  // quantize_dynamic_jit call it on every engine (FBGEMM accumulates pairs of int8 products in 16 bits without VNNI): the same
  // numbers as a Python user gets.
  const bool reduce_range = true;
  QuantizedLayers summary;
  std::map<const Graph*, std::vector<LinearSite>> sites;
  PackedCells packed;
  for (torch::jit::Module m : module.modules()) {
    for (const auto& method : m.get_methods()) {
      const auto graph = method.graph();
      auto found = sites.find(graph.get());
      if (found == sites.end()) {
        sites.emplace(graph.get(), rewrite(*graph, m, reduce_range, packed, summary));
        continue;
      }
      for (const LinearSite& site : found->second) {  // another instance of the same type
        if (site.recurrent) {
          pack_cells_once(m, site, reduce_range, packed, summary);
          continue;
        }
        const auto bias = site.bias.empty() ? c10::nullopt : tensor_attribute(m, site.bias);
        m.register_attribute(site.packed, m.type()->getAttribute(site.packed),
                             pack_weight(*tensor_attribute(m, site.weight), bias));
        ++summary.linear;
      }
    }
  }
  if (summary.linear + summary.recurrent == 0)
    throw ConfigError(
        "int8-dynamic: the model has no Linear, LSTM or GRU layer with weight attributes" +
        (summary.skipped.empty() ? std::string() : " (" + summary.skipped.front() + ")"));
  return summary;
}

}  // namespace torchperf
