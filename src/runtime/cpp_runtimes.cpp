#include <algorithm>

#include "runtimes.h"
#include "torchperf/compat/torch_compat.h"
#include "torchperf/models/exported_model.h"
#include "torchperf/models/workload.h"

namespace torchperf {
namespace {

bool one_of(const std::string& value, const std::vector<std::string>& values) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i)
    out += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
  return out;
}

// What the C++ runtimes share: LibTorch in torchperf's own worker, and CUDA graphs as a knob of
// their own (captured once per input shape, replayed per call).
class CppRuntime : public Runtime {
 public:
  std::string family() const override { return "cpp"; }
  RuntimeWorker worker() const override { return RuntimeWorker::kCpp; }
  std::optional<Applicability> applies(const std::string& knob, const std::string& value,
                                       const WorkloadTraits& view) const override {
    if (knob == "graph") {
      const auto mine = graphs(view);
      if (!one_of(value, mine))
        return Applicability::no(label() + " runs graph=" + joined(mine) +
                                 (value.rfind("compile", 0) == 0
                                      ? " (graph=" + value + " is torch.compile: runtime=python)"
                                      : ""));
      return graph_applies(value, view);
    }
    return std::nullopt;
  }
  virtual Applicability graph_applies(const std::string&, const WorkloadTraits&) const {
    return Applicability::yes();
  }
};

class TorchScriptRuntime final : public CppRuntime {
 public:
  std::string name() const override { return "torchscript"; }
  std::string label() const override { return "C++ TorchScript"; }
  Applicability accepts(const WorkloadTraits& model) const override {
    return model.torchscript_form
               ? Applicability::yes()
               : Applicability::no("needs a TorchScript graph (a TorchScript file, or a built-in)");
  }
  ModelForm form(const WorkloadTraits&) const override { return ModelForm::kTorchScript; }
  std::vector<std::string> graphs(const WorkloadTraits&) const override {
    return {"eager", "frozen", "frozen-opt", "fused"};
  }
  std::vector<std::string> expert_graphs(const WorkloadTraits&) const override {
    return {"frozen-opt", "frozen"};
  }
  Applicability graph_applies(const std::string& value, const WorkloadTraits& view) const override {
    if (value == "fused" && !view.cpu_fuser)
      return Applicability::no(
          "this LibTorch's TensorExpr fuser cannot compile for CPU (it was built without LLVM)");
    return Applicability::yes();
  }
  // On CUDA optimize_for_inference fuses convolution, add and ReLU into cuDNN's conv-add-relu,
  // which has no autocast rule: fed a half input beside float weights, cuDNN finds no engine,
  // with its benchmark on or off (measured on an H200, fp16-autocast, PyTorch 2.11).
  Applicability graph_takes(const std::string& graph, const std::string& knob,
                            const std::string& value, const WorkloadTraits& view) const override {
    if (graph != "frozen-opt" || knob != "precision" || !view.cuda || !view.convolutional ||
        value.size() < 9 || value.compare(value.size() - 9, 9, "-autocast") != 0)
      return Applicability::yes();
    return Applicability::no(
        "graph=frozen-opt with precision=" + value + " on CUDA: optimize_for_inference fuses "
        "convolutions into cuDNN's conv-add-relu, which autocast does not cast, and cuDNN finds "
        "no engine for it; use graph=frozen with autocast, or precision=fp16 or bf16 with "
        "frozen-opt");
  }
  bool compiles(const std::string&) const override { return false; }
  std::vector<std::string> training_steps(const WorkloadTraits&) const override {
    return {"torchscript"};
  }
  Applicability trains(const std::string& step, const WorkloadTraits& model) const override {
    if (step != "torchscript") return Applicability::no("TorchScript trains with step=torchscript");
    if (model.world_size > 1)
      return Applicability::no("DDP's ranks train in Python (step=eager or compile): LibTorch's "
                               "C++ API has no DistributedDataParallel");
    return model.torchscript_form ? Applicability::yes()
                                  : Applicability::no("the model has no TorchScript form");
  }
  bool freezes(const std::string& graph) const override {
    return graph == "frozen" || graph == "frozen-opt";
  }
  std::function<void()> enter(const std::string& graph, bool cuda) const override {
    if (graph != "fused" || cuda) return [] {};
    const compat::FuserState previous = compat::fuser_state();
    compat::set_fuser_state({true, true});
    return [previous] { compat::set_fuser_state(previous); };
  }
  void prepare(const std::string& graph, Workload& w) const override {
    if (!freezes(graph)) return;
    auto* ts = w.model->as_torchscript();
    torch::jit::Module frozen = torch::jit::freeze(ts->module());
    if (graph == "frozen-opt") frozen = torch::jit::optimize_for_inference(frozen);
    ts->replace(std::move(frozen));
  }
  RuntimeSnippet snippet(const std::string& graph, bool) const override {
    RuntimeSnippet s;
    if (graph == "frozen" || graph == "frozen-opt") {
      s.cpp_setup = {"module = torch::jit::freeze(module);"};
      // optimize_for_inference takes the module by non-const reference: not a temporary.
      if (graph == "frozen-opt")
        s.cpp_setup.push_back("module = torch::jit::optimize_for_inference(module);");
      s.python_setup = {graph == "frozen"
                            ? "model = torch.jit.freeze(model)"
                            : "model = torch.jit.optimize_for_inference(torch.jit.freeze(model))"};
    } else if (graph == "fused") {
      // Some LibTorch builds do not ship the fuser interface header, though the library has the
      // function: the snippet declares it then (src/compat, built against headers that have it,
      // includes it).
      s.cpp_includes = {"<torch/csrc/jit/passes/tensorexpr_fuser.h>"};
      s.cpp_declarations = {
          "#if __has_include(<torch/csrc/jit/codegen/fuser/interface.h>)",
          "#include <torch/csrc/jit/codegen/fuser/interface.h>",
          "#else",
          "namespace torch::jit { TORCH_API void overrideCanFuseOnCPU(bool value); }",
          "#endif"};
      s.cpp_setup = {"torch::jit::overrideCanFuseOnCPU(true);",
                     "torch::jit::setTensorExprFuserEnabled(true);"};
      s.python_setup = {"torch._C._jit_override_can_fuse_on_cpu(True)",
                        "torch._C._jit_set_texpr_fuser_enabled(True)"};
    }
    return s;
  }
};

class AotiRuntime final : public CppRuntime {
 public:
  std::string name() const override { return "aoti"; }
  std::string label() const override { return "C++ AOTInductor"; }
  Applicability accepts(const WorkloadTraits& model) const override {
    if (!model.program_form)
      return Applicability::no("needs a torch.export program (.pt2): export the model with "
                               "torch.export.save, or pass --from-python MODULE:CALLABLE");
    // A stream of varying sizes (--dim) runs too: the session checked that the program takes
    // them (a built-in's is exported with them dynamic).
    return Applicability::yes();
  }
  ModelForm form(const WorkloadTraits&) const override { return ModelForm::kProgram; }
  std::vector<std::string> graphs(const WorkloadTraits&) const override {
    return {"aoti", "aoti-max-autotune"};
  }
  std::vector<std::string> expert_graphs(const WorkloadTraits&) const override {
    return {"aoti-max-autotune", "aoti"};
  }
  bool compiles(const std::string&) const override { return true; }
  void prepare(const std::string& graph, Workload& w) const override {
    w.model->as_exported()->compile(autotunes(graph));
  }
  RuntimeSnippet snippet(const std::string& graph, bool) const override {
    RuntimeSnippet s;
    // The program is compiled once, in Python; C++ loads the package.
    const std::string autotune = autotunes(graph) ? ", \"max_autotune\": True" : "";
    s.python_setup = {
        "package = torch._inductor.aoti_compile_and_package(torch.export.load(PROGRAM_PATH), "
        "inductor_configs={\"freezing\": True" + autotune + "})",
        "model = torch._inductor.aoti_load_package(package)"};
    s.cpp_includes = {"<torch/csrc/inductor/aoti_package/model_package_loader.h>"};
    s.cpp_setup = {"// the package compiled in Python (or torchperf's cache, `torchperf bench "
                   "--json` names it)",
                   "torch::inductor::AOTIModelPackageLoader package(PACKAGE_PATH);"};
    return s;
  }
  Artefact artefact(const KnobValues& value, const WorkloadTraits& view) const override {
    return aoti_package_artefact(value("graph"), value("precision"), view);
  }
  static bool autotunes(const std::string& graph) { return graph == "aoti-max-autotune"; }
};

}  // namespace

Artefact aoti_package_artefact(const std::string& graph, const std::string& precision,
                               const WorkloadTraits& view) {
  Artefact a;
  a.kind = ArtefactKind::kPackage;
  a.package.precision = precision;
  a.package.max_autotune = graph == "aoti-max-autotune";
  a.package.device = view.cuda ? "cuda" : "cpu";
  a.name = a.package.to_string();
  a.autotunes = a.package.max_autotune;
  return a;
}

const Runtime& torchscript_runtime() {
  static const TorchScriptRuntime runtime;
  return runtime;
}

const Runtime& aoti_runtime() {
  static const AotiRuntime runtime;
  return runtime;
}

}  // namespace torchperf
