#include <algorithm>

#include <fmt/format.h>

#include "runtimes.h"
#include "torchperf/error.h"
#include "torchperf/feed/shape_stream.h"

namespace torchperf {

// reduce-overhead is CUDA graphs, and max-autotune-no-cudagraphs differs from max-autotune only
// where CUDA graphs exist: both only on CUDA. Training offers the modes whose CUDA graphs its
// step can replay (max-autotune-no-cudagraphs is inference's).
const std::vector<CompileMode>& compile_modes() {
  static const std::vector<CompileMode> modes = {
      {"compile", nullptr, false, false, true, false, nullptr, false},
      {"compile-reduce-overhead", "reduce-overhead", true, true, true, false, nullptr, false},
      {"compile-max-autotune", "max-autotune", false, true, true, true, nullptr, false},
      {"compile-max-autotune-no-cudagraphs", "max-autotune-no-cudagraphs", true, false, false, true,
       nullptr, false},
      // Lengths that vary (issue 52): the shapes torch.compile specialises on, chosen.
      {"compile-dynamic", nullptr, false, false, false, false, "on", true},
      {"compile-static", nullptr, false, false, false, false, "off", true},
  };
  return modes;
}

const CompileMode* compile_mode(const std::string& graph) {
  for (const auto& m : compile_modes())
    if (graph == m.graph) return &m;
  return nullptr;
}

namespace {

const CompileMode* mode_of(const std::string& graph) { return compile_mode(graph); }

// torch._dynamo.config.recompile_limit's default (cache_size_limit before 2.6): the graphs one
// function compiles before it runs eager.
constexpr std::size_t kRecompileLimit = 8;

// What both Python runtimes make of the knobs: PyTorch in the venv's Python applies the graph
// (eager or a torch.compile mode), precision (autocast, or weights and inputs converted), the
// memory format, autograd's mode, threads, the batch and the allocator; the rest are LibTorch's
// (TorchScript passes, its process flags) and do not apply.
class PythonRuntime : public Runtime {
 public:
  // The Python training step builds the model from its Python definition.
  static Applicability python_definition(const WorkloadTraits& model) {
    if (model.python_definition) return Applicability::yes();
    return Applicability::no(
        "the Python training step builds the model from its Python definition, which a "
        "built-in has and a TorchScript file does not (it trains with step=torchscript)");
  }
  std::string family() const override { return "python"; }
  RuntimeWorker worker() const override { return RuntimeWorker::kPython; }
  ModelForm form(const WorkloadTraits& model) const override {
    return model.program_form ? ModelForm::kProgram : ModelForm::kTorchScript;
  }
  std::vector<std::string> graphs(const WorkloadTraits& view) const override {
    std::vector<std::string> out = {"eager"};
    if (!view.program_form) return out;  // torch.compile does not trace a ScriptModule
    for (const auto& m : compile_modes())
      if ((!m.cuda_only || view.cuda) && (!m.varying_only || !view.named_dims.empty()))
        out.push_back(m.graph);
    return out;
  }
  std::vector<std::string> expert_graphs(const WorkloadTraits& view) const override {
    if (!view.program_form) return {};
    // On CUDA the guides' last step is CUDA graphs (reduce-overhead); on a CPU, plain compile.
    // Where a length varies, one graph for every length (dynamic=True) first: the automatic
    // default recompiles on the stream's second shape, and on a 6-layer encoder's stream ran
    // 0.83-0.93x of dynamic=True by hand (bench section 23).
    if (!view.cuda && !view.named_dims.empty())
      return std::vector<std::string>{"compile-dynamic", "compile"};
    return view.cuda ? std::vector<std::string>{"compile-reduce-overhead", "compile"}
                     : std::vector<std::string>{"compile"};
  }
  std::optional<Applicability> applies(const std::string& knob, const std::string& value,
                                       const WorkloadTraits& view) const override {
    if (knob == "runtime") return std::nullopt;
    // The allocator is preloaded into the Python worker as into the C++ one (its environment),
    // and the worker's mapped libraries confirm it.
    // cuDNN's benchmark and TF32 are torch.backends flags in Python as in C++ (CUDA only).
    if (knob == "threads" || knob == "batch" || knob == "allocator" ||
        knob == "cudnn_benchmark" || knob == "tf32" || knob == "padding" || knob == "batching")
      return std::nullopt;
    if (knob == "grad") return Applicability::yes();
    if (knob == "graph") {
      const CompileMode* m = mode_of(value);
      if (value != "eager" && !m)
        return Applicability::no("runtime=python runs graph=eager or a torch.compile mode (" +
                                 compile_graphs() + ")" +
                                 (value.rfind("aoti", 0) == 0
                                      ? "; an AOTInductor package runs in Python for a tune "
                                        "started from Python (torchperf.tune)"
                                      : ""));
      if (m && !view.program_form)
        return Applicability::no("torch.compile needs a torch.export program or a built-in: it "
                                 "does not trace a TorchScript module");
      if (m && m->cuda_only && !view.cuda)
        return Applicability::no("graph=" + value + " replays CUDA graphs: it exists only on "
                                 "CUDA devices");
      if (m && m->varying_only && view.named_dims.empty())
        return Applicability::no("graph=" + value + " sets torch.compile's dynamic=, which "
                                 "differs only where a dimension varies (--dim): one shape "
                                 "compiles static either way");
      return Applicability::yes();
    }
    if (knob == "precision") {
      if (value == "fp32" || value == "bf16-autocast" || value == "bf16") return Applicability::yes();
      if (value == "fp16-autocast" || value == "fp16")
        return view.cuda ? Applicability::yes()
                         : Applicability::no("precision=" + value + " exists only on CUDA devices");
      if (value.rfind("int8-", 0) == 0 && value != "int8-dynamic") return int8(value, view);
      return Applicability::no("runtime=python applies fp32, bf16 or fp16 (weights and inputs "
                               "converted), their autocast, or int8-static, int8-weight-only or "
                               "int8-dynamic-activation");
    }
    if (knob == "format") {
      if (!view.convolutional) return Applicability::no("the model has no 2-D convolutions");
      if (!view.image_input) return Applicability::no("no input is a 4-D floating tensor");
      return Applicability::yes();
    }
    if (knob == "cuda_graphs")
      return Applicability::no("the python runtime captures CUDA graphs through torch.compile: "
                               "graph=compile-reduce-overhead");
    return Applicability::no("not applied by the python runtime (runtime=python)");
  }
  // dynamic=False compiles a graph for each padded width of the stream, up to Dynamo's recompile
  // limit; past it every new width runs eager, in the user's process as in ours, while a
  // measurement over a few batches meets only a few widths: such a point is not offered.
  Applicability graph_takes(const std::string& graph, const std::string& knob,
                            const std::string& padding, const WorkloadTraits& view) const override {
    const CompileMode* m = mode_of(graph);
    if (knob != "padding" || !m || !m->dynamic || std::string(m->dynamic) != "off" || view.stream_batch_longest.empty())
      return Applicability::yes();
    const std::size_t widths =
        padded_widths(parse_padding(padding), view.stream_batch_longest, view.stream_longest);
    if (widths <= kRecompileLimit) return Applicability::yes();
    return Applicability::no(fmt::format(
        "graph={} compiles a graph for each padded width, and padding={} leaves {} widths in this "
        "stream: torch.compile stops recompiling at {} (torch._dynamo.config.recompile_limit) and "
        "runs the rest eager; pad to {} widths or fewer (padding=multiple:N or buckets:...) or use "
        "graph=compile-dynamic",
        graph, padding, widths, kRecompileLimit, kRecompileLimit));
  }
  std::optional<std::vector<std::string>> values(const std::string& knob,
                                                 const WorkloadTraits& view) const override {
    if (knob == "graph") return graphs(view);
    if (knob == "precision") {
      if (view.cuda)
        return std::vector<std::string>{"fp32", "bf16-autocast", "bf16", "fp16-autocast", "fp16"};
      // int8 where it can apply (the precision knob leaves torchao's weight configs out of a
      // default sweep: they need the model's nn.Linear modules, which a .pt2 does not keep).
      std::vector<std::string> out = {"fp32", "bf16-autocast", "bf16"};
      if (static_int8(view).applies) out.push_back("int8-static");
      if (int8("int8-weight-only", view).applies)
        out.insert(out.end(), {"int8-weight-only", "int8-dynamic-activation"});
      return out;
    }
    // no_grad and inference_mode differ only by autograd's version counters: a sweep tries
    // inference (the guides' advice); no_grad is taken when asked for.
    if (knob == "grad") return std::vector<std::string>{"on", "inference"};
    return std::nullopt;
  }
  std::optional<std::string> baseline(const std::string& knob,
                                      const WorkloadTraits&) const override {
    if (knob == "graph") return std::string("eager");
    if (knob == "grad") return std::string("on");
    return std::nullopt;
  }
  std::optional<std::vector<std::string>> expert(const std::string& knob,
                                                 const WorkloadTraits& view) const override {
    if (knob == "graph") return expert_graphs(view);
    // Half weights on CUDA: the fastest eager setting of the GPU guides; bf16 autocast on a CPU.
    // On a CPU, a CNN's int8 calibrated on the inputs first: on ResNet-18 with VNNI it ran 3-4x
    // fp32's torch.compile, within the accuracy guard; an MLP's small matmuls ran 0.5x eager.
    if (knob == "precision") {
      if (view.cuda) return std::vector<std::string>{"fp16", "bf16"};
      if (view.convolutional && int8("int8-static", view).applies)
        return std::vector<std::string>{"int8-static", "bf16-autocast"};
      return std::vector<std::string>{"bf16-autocast"};
    }
    if (knob == "grad") return std::vector<std::string>{"inference"};
    if (knob == "format")
      return view.convolutional ? std::vector<std::string>{"channels_last"}
                                : std::vector<std::string>{};
    // The stream's policies are the guides' for every runtime (bucketing, sorting by length).
    if (knob == "threads" || knob == "batch" || knob == "padding" || knob == "batching")
      return std::nullopt;
    return std::vector<std::string>{};
  }
  RuntimeSnippet snippet(const std::string& graph, bool cuda) const override {
    RuntimeSnippet s;
    const CompileMode* m = mode_of(graph);
    if (!m) return s;
    // Freezing folds the weights in as constants; Inductor applies it only to a graph first
    // called without autograd (no_grad, inference_mode), as the Python worker runs it.
    s.python_setup = {
        "import torch._inductor.config",
        "torch._inductor.config.freezing = True  # applied when the first call runs without autograd",
        m->mode ? "model = torch.compile(model, mode=\"" + std::string(m->mode) + "\")"
        : m->dynamic ? "model = torch.compile(model, dynamic=" +
                           std::string(std::string(m->dynamic) == "on" ? "True" : "False") + ")"
                     : std::string("model = torch.compile(model)"),
        "# the first call compiles (torchperf reports its time apart from the run's)"};
    s.cpp_setup = {"// graph=" + graph + " is torch.compile: the Python snippet applies it"};
    (void)cuda;
    return s;
  }

 private:
  // The python runtime's int8 (python/torchperf/int8.py): PT2E static int8 lowered by Inductor,
  // and torchao's quantize_ configs; torchao comes with the engines' extra.
  static Applicability with_torchao(const std::string& value, const WorkloadTraits& view) {
    if (std::find(view.engines.begin(), view.engines.end(), "torchao") != view.engines.end())
      return Applicability::yes();
    return Applicability::no("precision=" + value + " needs torchao in the Python worker's "
                             "Python (pip install 'torchperf[engines]')");
  }
  // Whatever the graph.
  static Applicability static_int8(const WorkloadTraits& view) {
    if (const Applicability a = with_torchao("int8-static", view); !a.applies) return a;
#if !defined(__x86_64__) && !defined(_M_X64)
    return Applicability::no("X86InductorQuantizer's int8 kernels run on x86 CPUs only, and "
                             "this is not one");
#endif
    if (view.cuda)
      return Applicability::no("X86InductorQuantizer's int8 kernels run on x86 CPUs only");
    if (!view.convolutional && !view.linear)
      return Applicability::no("the model has no convolutions or Linear layers to quantize");
    return Applicability::yes();
  }
  Applicability int8(const std::string& value, const WorkloadTraits& view) const {
    if (value == "int8-static") {
      if (const Applicability a = static_int8(view); !a.applies) return a;
      if (!compiles(""))
        return Applicability::no("Inductor lowers PT2E's quantize/dequantize pairs to int8 "
                                 "kernels: precision=int8-static needs a torch.compile graph");
      return Applicability::yes();
    }
    if (const Applicability a = with_torchao(value, view); !a.applies) return a;
    if (value != "int8-weight-only" && value != "int8-dynamic-activation")
      return Applicability::no("runtime=python's int8 is int8-static, int8-weight-only or "
                               "int8-dynamic-activation");
    if (!view.linear) return Applicability::no("the model has no Linear layers to quantize");
    return Applicability::yes();
  }
  static std::string compile_graphs() {
    std::string out;
    for (const auto& m : compile_modes()) out += (out.empty() ? "" : ", ") + std::string(m.graph);
    return out;
  }
};

class PythonEagerRuntime final : public PythonRuntime {
 public:
  std::string name() const override { return "python-eager"; }
  std::string label() const override { return "Python eager"; }
  Applicability accepts(const WorkloadTraits& model) const override {
    return model.program_form || model.torchscript_form
               ? Applicability::yes()
               : Applicability::no("the python runtime runs a torch.export program or a "
                                   "TorchScript model");
  }
  bool compiles(const std::string&) const override { return false; }
  std::vector<std::string> training_steps(const WorkloadTraits&) const override {
    return {"eager"};
  }
  Applicability trains(const std::string& step, const WorkloadTraits& model) const override {
    if (step != "eager") return Applicability::no("Python eager trains with step=eager");
    return python_definition(model);
  }
};

class PythonCompileRuntime final : public PythonRuntime {
 public:
  std::string name() const override { return "python-compile"; }
  std::string label() const override { return "Python torch.compile"; }
  Applicability accepts(const WorkloadTraits& model) const override {
    return model.program_form
               ? Applicability::yes()
               : Applicability::no("torch.compile needs a torch.export program or a built-in: it "
                                   "does not trace a TorchScript module");
  }
  bool compiles(const std::string&) const override { return true; }
  bool captures_cuda_graphs(const std::string& graph, bool cuda) const override {
    const CompileMode* m = mode_of(graph);
    return cuda && m && m->cuda_graphs;
  }
  Artefact artefact(const KnobValues& value, const WorkloadTraits&) const override {
    Artefact a;
    const CompileMode* m = mode_of(value("graph"));
    if (!m) return a;
    a.kind = ArtefactKind::kWorkerCompile;
    a.name = m->graph;
    a.plain = compile_modes().front().graph;
    a.autotunes = m->autotunes;
    return a;
  }
  std::vector<std::string> training_steps(const WorkloadTraits& model) const override {
    std::vector<std::string> out;
    for (const auto& m : compile_modes())
      if (m.trains && (!m.cuda_only || model.cuda) && (!m.cuda_graphs || model.cuda))
        out.push_back(m.graph);
    return out;
  }
  Applicability trains(const std::string& step, const WorkloadTraits& model) const override {
    const CompileMode* m = mode_of(step);
    if (!m || !m->trains) {
      std::string modes;
      for (const auto& mode : compile_modes())
        if (mode.trains) modes += (modes.empty() ? "" : ", ") + std::string(mode.graph);
      return Applicability::no("torch.compile trains with step=" + modes);
    }
    if (const Applicability defined = python_definition(model); !defined.applies) return defined;
    if ((m->cuda_only || m->cuda_graphs) && !model.cuda)
      return Applicability::no(step + " is for CUDA devices (its CUDA graphs); use compile");
    return Applicability::yes();
  }
};

// An AOTInductor package run by Python's loader (torch._inductor.aoti_load_package) in the
// Python worker: what a Python caller runs when a package wins, with the loader's per-call cost
// (its pytree and argument conversion), which the C++ loader does not pay. Offered where the
// caller's own module came with the program (a tune from Python): from the CLI, the C++ loader
// measures the package.
class PythonAotiRuntime final : public PythonRuntime {
 public:
  std::string name() const override { return "python-aoti"; }
  std::string label() const override { return "Python AOTInductor"; }
  Applicability accepts(const WorkloadTraits& model) const override {
    if (!model.program_form)
      return Applicability::no("needs a torch.export program: AOTInductor compiles it");
    if (!model.caller_module)
      return Applicability::no("offered to a tune from Python (torchperf.tune), whose process "
                               "loads the package with Python's loader; the CLI measures it in "
                               "C++ (runtime=cpp,graph=aoti)");
    return Applicability::yes();
  }
  // The graphs of the package, as the C++ runtime names them.
  ModelForm form(const WorkloadTraits&) const override { return ModelForm::kProgram; }
  std::vector<std::string> graphs(const WorkloadTraits& view) const override {
    return aoti_runtime().graphs(view);
  }
  std::vector<std::string> expert_graphs(const WorkloadTraits& view) const override {
    return aoti_runtime().expert_graphs(view);
  }
  bool compiles(const std::string&) const override { return true; }
  std::optional<Applicability> applies(const std::string& knob, const std::string& value,
                                       const WorkloadTraits& view) const override {
    if (knob == "graph")
      return value.rfind("aoti", 0) == 0
                 ? Applicability::yes()
                 : Applicability::no("the Python AOTInductor runtime runs graph=aoti or "
                                     "aoti-max-autotune");
    if (knob == "grad")
      return Applicability::no("a package has no autograd: it runs as it was compiled");
    if (knob == "format")
      return Applicability::no("a package takes its inputs as it was compiled");
    if (knob == "precision") {
      if (value == "fp32" || value == "bf16") return Applicability::yes();
      if (value == "fp16")
        return view.cuda ? Applicability::yes()
                         : Applicability::no("precision=fp16 exists only on CUDA devices");
      return Applicability::no("a package is compiled in fp32, bf16 or fp16 (weights and inputs "
                               "converted): autocast is not compiled into it");
    }
    return PythonRuntime::applies(knob, value, view);
  }
  // graph's values and starts are the base's, read through graphs() and expert_graphs().
  std::optional<std::vector<std::string>> values(const std::string& knob,
                                                 const WorkloadTraits& view) const override {
    if (knob == "precision")
      return view.cuda ? std::vector<std::string>{"fp32", "bf16", "fp16"}
                       : std::vector<std::string>{"fp32", "bf16"};
    return PythonRuntime::values(knob, view);
  }
  std::optional<std::string> baseline(const std::string& knob,
                                      const WorkloadTraits& view) const override {
    if (knob == "graph") return std::string("aoti");
    return PythonRuntime::baseline(knob, view);
  }
  std::optional<std::vector<std::string>> expert(const std::string& knob,
                                                 const WorkloadTraits& view) const override {
    if (knob == "precision")
      return view.cuda ? std::vector<std::string>{"fp16", "bf16"}
                       : std::vector<std::string>{"bf16"};
    return PythonRuntime::expert(knob, view);
  }
  RuntimeSnippet snippet(const std::string& graph, bool cuda) const override {
    return aoti_runtime().snippet(graph, cuda);
  }
  Artefact artefact(const KnobValues& value, const WorkloadTraits& view) const override {
    return aoti_package_artefact(value("graph"), value("precision"), view);
  }
};

}  // namespace

const Runtime& python_aoti_runtime() {
  static const PythonAotiRuntime runtime;
  return runtime;
}

const Runtime& python_eager_runtime() {
  static const PythonEagerRuntime runtime;
  return runtime;
}

const Runtime& python_compile_runtime() {
  static const PythonCompileRuntime runtime;
  return runtime;
}

}  // namespace torchperf
