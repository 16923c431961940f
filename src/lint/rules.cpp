#include <torch/csrc/autograd/anomaly_mode.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "graph_sites.h"
#include "torchperf/error.h"
#include "torchperf/lint/lint.h"
#include "torchperf/models/graph_rewrites.h"

namespace torchperf {
namespace {

using torch::jit::Node;
using torch::jit::Value;

Finding at(const Node* n, std::string rule, Severity severity) {
  Finding f;
  f.rule = std::move(rule);
  f.severity = severity;
  f.module = lint_detail::module_path(n);
  f.source = lint_detail::source_line(n);
  f.op = n->kind().toQualString();
  return f;
}

std::string named(const std::string& module) { return module.empty() ? "forward" : module; }

bool is_kind(const Node* n, std::initializer_list<const char*> kinds) {
  const std::string op = n->kind().toQualString();
  return std::any_of(kinds.begin(), kinds.end(), [&](const char* k) { return op == k; });
}

bool constant_false(const Value* v) {
  const auto c = torch::jit::toIValue(v);
  return c && c->isBool() && !c->toBool();
}

// Whether the value leaves forward as (part of) its result: its size is the model's contract
// (classes, output features), not the user's to pad.
bool returned(const Value* v) {
  for (const auto& use : v->uses()) {
    const Node* user = use.user;
    if (user->kind() == c10::prim::Return) return true;
    if (is_kind(user, {"prim::TupleConstruct", "prim::ListConstruct", "prim::DictConstruct"}))
      if (returned(user->output())) return true;
  }
  return false;
}

// ---- conv bias before batch norm ----

void conv_bias_before_batch_norm(const Node* n, std::vector<Finding>& out) {
  if (!is_conv_bias_before_batch_norm(n)) return;
  const auto& uses = n->output()->uses();
  Finding f = at(n, "conv-bias-before-bn", Severity::kWarning);
  const std::string bn = lint_detail::module_path(uses[0].user);
  f.evidence = fmt::format(
      "{} adds a bias, and the batch norm {} right after subtracts each channel's mean: the bias "
      "cancels out (in training), costs an add per element and a parameter to learn",
      named(f.module), named(bn));
  f.fix = "build the convolution with bias=False (conv_bias=fold folds it into the batch norm's "
          "running mean)";
  f.fixable = true;
  out.push_back(std::move(f));
}

// ---- sizes that are not multiples of the hardware's ----

void size_multiples(const Node* n, const torch::jit::Module& module, const torch::jit::Graph& g,
                    const SizeMultiple& m, const std::vector<HiddenLinearSize>& paddable,
                    std::vector<Finding>& out) {
  const bool conv = is_convolution(n);
  const bool linear = n->kind() == c10::aten::linear;
  const bool embedding = n->kind() == c10::aten::embedding;
  if (!conv && !linear && !embedding) return;
  const Value* weight_value = embedding ? n->input(0) : n->input(1);
  const auto weight = known_value(weight_value, module);
  if (!weight || !weight->isTensor()) return;
  const at::Tensor w = weight->toTensor();
  if (w.dim() < 2) return;
  const auto off = [&](std::int64_t size) { return size % m.multiple != 0; };
  std::vector<std::string> sizes;
  const bool from_input = g.inputs().size() > 1 && n->input(0) == g.inputs()[1];
  if (conv) {
    if (off(w.size(0)) && !returned(n->output()))
      sizes.push_back(fmt::format("{} output channels", w.size(0)));
    // Not the image's own channels, nor a depthwise convolution's one channel per group.
    if (off(w.size(1)) && w.size(1) > 1 && !from_input)
      sizes.push_back(fmt::format("{} input channels per group", w.size(1)));
  } else if (linear) {
    if (off(w.size(0)) && !returned(n->output()))
      sizes.push_back(fmt::format("{} output features", w.size(0)));
    if (off(w.size(1)) && !from_input) sizes.push_back(fmt::format("{} input features", w.size(1)));
  } else {
    if (off(w.size(0))) sizes.push_back(fmt::format("a vocabulary of {}", w.size(0)));
    if (off(w.size(1))) sizes.push_back(fmt::format("{} hidden features", w.size(1)));
  }
  if (sizes.empty()) return;
  Finding f = at(n, "size-multiple", Severity::kInfo);
  std::string list;
  for (const auto& s : sizes) list += (list.empty() ? "" : " and ") + s;
  f.evidence = fmt::format("{} has {}, not multiples of {} ({})", named(f.module), list, m.multiple,
                           m.evidence);
  f.fix = fmt::format("round the sizes up to multiples of {} (the padding is zeros: measure it "
                      "with bench before and after)",
                      m.multiple);
  // A hidden size between two Linear layers: pad=8/16/64 pads it without changing the output.
  for (const auto& site : paddable)
    if ((site.producer == n || site.consumer == n) && off(site.size)) {
      f.fix += fmt::format("; pad={} pads the hidden size {} with zeros", m.multiple, site.size);
      f.fixable = true;
      break;
    }
  out.push_back(std::move(f));
}

// ---- tensors made on the host, copies between devices ----

void host_tensors_and_copies(const Node* n, bool cuda, std::vector<Finding>& out) {
  if (is_kind(n, {"aten::cpu", "aten::cuda"}) ||
      (n->kind() == c10::aten::to && n->inputs().size() > 1 &&
       n->input(1)->type()->kind() == c10::TypeKind::DeviceObjType)) {
    if (n->kind() == c10::aten::to && !torch::jit::toIValue(n->input(1))) return;  // x.device
    Finding f = at(n, "device-copy", Severity::kWarning);
    f.evidence = fmt::format("{} copies a tensor to a fixed device inside forward, at every call",
                             named(f.module));
    f.fix = "keep tensors on the model's device (register_buffer moves with the model), or copy "
            "the inputs once, outside forward";
    out.push_back(std::move(f));
    return;
  }
  if (!is_kind(n, {"aten::tensor", "aten::zeros", "aten::ones", "aten::empty", "aten::full",
                   "aten::arange", "aten::rand", "aten::randn", "aten::randint", "aten::eye",
                   "aten::linspace", "aten::scalar_tensor", "aten::as_tensor"}))
    return;
  const auto* schema = n->maybeSchema();
  if (!schema) return;
  const auto index = schema->argumentIndexWithName("device");
  if (!index || static_cast<std::size_t>(*index) >= n->inputs().size()) return;
  const auto device = torch::jit::toIValue(n->input(*index));
  if (!device) return;  // follows a value such as x.device
  if (!device->isNone() && !(device->isDevice() && device->toDevice().is_cpu())) return;
  Finding f = at(n, "host-tensor", cuda ? Severity::kWarning : Severity::kInfo);
  f.evidence = fmt::format(
      "{} creates a tensor on the host ({}) at every call{}", named(f.module),
      device->isNone() ? "device=None" : "device=cpu",
      cuda ? ": on a CUDA device each is an allocation and a copy" : ": an allocation per call");
  f.fix = "make it once: a buffer (register_buffer), or device=x.device from an input";
  out.push_back(std::move(f));
}

// ---- calls that wait for the device ----

void host_syncs(const Node* n, std::vector<Finding>& out) {
  const bool reads_tensor =
      is_kind(n, {"aten::Int", "aten::Float", "aten::Bool", "aten::IntImplicit",
                  "aten::FloatImplicit", "aten::ScalarImplicit"}) &&
      !n->inputs().empty() && n->input(0)->type()->isSubtypeOf(*c10::TensorType::get());
  if (!reads_tensor && !is_kind(n, {"aten::item", "prim::tolist", "aten::tolist", "aten::nonzero",
                                    "aten::is_nonzero", "aten::_local_scalar_dense"}))
    return;
  Finding f = at(n, "host-sync", Severity::kWarning);
  f.evidence = fmt::format(
      "{} reads a tensor's value on the host{}: on a CUDA device the call waits until every "
      "queued kernel has run, and the host stops queueing",
      named(f.module), n->kind() == c10::aten::nonzero ? " (its output size depends on the data)" : "");
  f.fix = "keep the value a tensor (torch.where, masking) or read it once outside forward";
  out.push_back(std::move(f));
}

void debugging_ops(const Node* n, std::vector<Finding>& out) {
  if (n->kind() == c10::prim::Print) {
    Finding f = at(n, "debug-print", Severity::kWarning);
    f.evidence = fmt::format("{} prints at every call (a host sync and terminal I/O)", named(f.module));
    f.fix = "remove the print, or guard it behind a flag outside forward";
    out.push_back(std::move(f));
  } else if (std::string(n->kind().toQualString()).rfind("profiler::", 0) == 0) {
    Finding f = at(n, "debug-profiler", Severity::kInfo);
    f.evidence = fmt::format("{} opens a profiler range (record_function) at every call",
                             named(f.module));
    f.fix = "remove record_function ranges from a model you deploy";
    out.push_back(std::move(f));
  }
}

// Aggregated: dozens of batch norms make one finding, with the first few named.
struct TrainingModeSites {
  std::vector<std::string> dropout, batch_norm;
  void visit(const Node* n) {
    if (is_kind(n, {"aten::dropout", "aten::dropout_", "aten::feature_dropout",
                    "aten::alpha_dropout", "aten::feature_alpha_dropout"}) &&
        n->inputs().size() > 2 && !constant_false(n->input(2)))
      dropout.push_back(named(lint_detail::module_path(n)));
    if (n->kind() == c10::aten::batch_norm && n->inputs().size() > 5 && !constant_false(n->input(5)))
      batch_norm.push_back(named(lint_detail::module_path(n)));
  }
};

std::string first_few(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 4; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 4) s += fmt::format(" and {} more", names.size() - 4);
  return s;
}

void training_mode(const TrainingModeSites& sites, std::vector<Finding>& out) {
  if (sites.dropout.empty() && sites.batch_norm.empty()) return;
  Finding f;
  f.rule = "saved-in-training-mode";
  f.severity = Severity::kWarning;
  f.op = sites.batch_norm.empty() ? "aten::dropout" : "aten::batch_norm";
  std::string what;
  if (!sites.dropout.empty())
    what = fmt::format("{} dropout call(s) drop activations ({})", sites.dropout.size(),
                       first_few(sites.dropout));
  if (!sites.batch_norm.empty())
    what += (what.empty() ? "" : "; ") +
            fmt::format("{} batch norm(s) use batch statistics and update their running ones ({})",
                        sites.batch_norm.size(), first_few(sites.batch_norm));
  f.evidence = "the model was saved in training mode: " + what;
  f.fix = "call model.eval() before saving (or run with --mode eval); freezing needs it too";
  out.push_back(std::move(f));
}

}  // namespace

SizeMultiple preferred_multiple(const LintContext& c) {
  if (c.cuda) return {8, "tensor cores take fp16/bf16 matrix sizes in multiples of 8"};
  const bool avx512 = std::find(c.cpu_isa.begin(), c.cpu_isa.end(), "avx512f") != c.cpu_isa.end();
  if (avx512) return {16, "this CPU has AVX-512: 16 floats a vector, and oneDNN blocks channels by 16"};
  return {8, "this CPU's widest vectors hold 8 floats (AVX2), and oneDNN blocks channels by 8"};
}

std::vector<Finding> lint_module(const torch::jit::Module& module, const LintContext& context) {
  if (!module.find_method("forward"))
    throw ModelError("the module has no forward method: lint reads forward's graph");
  auto graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  const SizeMultiple multiple = preferred_multiple(context);
  std::vector<Finding> out;
  TrainingModeSites training;
  const std::vector<HiddenLinearSize> paddable = hidden_linear_sizes(*graph, module);
  for_each_node(graph->block(), [&](Node* n) {
    conv_bias_before_batch_norm(n, out);
    size_multiples(n, module, *graph, multiple, paddable, out);
    host_tensors_and_copies(n, context.cuda, out);
    host_syncs(n, out);
    debugging_ops(n, out);
    if (context.saved_training) training.visit(n);
  });
  training_mode(training, out);
  // One finding per place: nn.Conv2d's forward holds its convolution twice (in the two branches
  // of its padding mode), and a shared submodule's ops appear once per call.
  std::set<std::string> seen;
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const Finding& f) {
                             return !seen.insert(f.rule + "|" + f.module + "|" + f.evidence).second;
                           }),
            out.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return out;
}

std::vector<Finding> lint_process() {
  std::vector<Finding> out;
  auto add = [&](const std::string& rule, Severity severity, const std::string& evidence,
                 const std::string& fix) {
    Finding f;
    f.rule = rule;
    f.severity = severity;
    f.evidence = evidence;
    f.fix = fix;
    out.push_back(std::move(f));
  };
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (env("CUDA_LAUNCH_BLOCKING") == "1")
    add("debug-environment", Severity::kWarning,
        "CUDA_LAUNCH_BLOCKING=1: every CUDA kernel launch waits until the kernel has finished",
        "unset CUDA_LAUNCH_BLOCKING (it is for locating CUDA errors)");
  if (env("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1")
    add("debug-environment", Severity::kWarning,
        "PYTORCH_NO_CUDA_MEMORY_CACHING=1: every CUDA allocation goes to cudaMalloc and cudaFree",
        "unset PYTORCH_NO_CUDA_MEMORY_CACHING (it is for memory checkers)");
  for (const char* name : {"ONEDNN_VERBOSE", "DNNL_VERBOSE", "MKLDNN_VERBOSE"}) {
    const std::string v = env(name);
    if (!v.empty() && v != "0")
      add("debug-environment", Severity::kWarning,
          std::string(name) + "=" + v + ": oneDNN prints a line for every primitive it runs",
          std::string("unset ") + name);
  }
  if (!env("PYTORCH_JIT_LOG_LEVEL").empty())
    add("debug-environment", Severity::kInfo,
        "PYTORCH_JIT_LOG_LEVEL=" + env("PYTORCH_JIT_LOG_LEVEL") +
            ": the TorchScript passes it names print graphs as they run",
        "unset PYTORCH_JIT_LOG_LEVEL");
  if (torch::autograd::AnomalyMode::is_enabled())
    add("debug-anomaly", Severity::kWarning,
        "autograd anomaly detection is on: every backward op records and checks its trace",
        "turn it off (torch.autograd.set_detect_anomaly(False)) outside debugging");
  return out;
}

}  // namespace torchperf
