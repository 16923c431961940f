#include "runtime_knob.h"

#include <algorithm>
#include <utility>

#include "process_knobs.h"

namespace torchperf {
namespace {

bool one_of(const std::string& value, std::initializer_list<const char*> values) {
  return std::any_of(values.begin(), values.end(), [&](const char* v) { return value == v; });
}

const char* const kNotApplied = "not applied by the python runtime (runtime=python)";

}  // namespace

Knob runtime_knob() {
  Knob k;
  k.name = "runtime";
  k.description =
      "who runs the model: cpp (LibTorch in torchperf's C++ worker: TorchScript, or a torch.export "
      "program's AOTInductor package) or python (PyTorch in the .venv's Python, in a worker of its "
      "own: eager or torch.compile); the statistics, the reference and the guard are the same";
  // A runtime is a process of its own: two sides that differ in it run in two processes.
  k.scope = KnobScope::kWorker;
  k.listed_at_baseline = false;  // configurations written before it keep their names
  k.values = [](const WorkloadTraits&) { return fixed({"cpp", "python"}); };
  // A torch.export program's default tune measures both: the choice between staying in Python
  // with torch.compile and running the AOTInductor package from C++ is what its user faces. A
  // TorchScript model runs in Python only when --space names it (torch.compile does not trace a
  // ScriptModule, so only eager would be tried).
  k.swept_by_default = [](const WorkloadTraits& t) { return t.exported_program; };
  k.baseline = [](const WorkloadTraits&) { return "cpp"; };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    if (value == "python" && !t.exported_program && !t.torchscript)
      return Applicability::no("the python runtime runs a torch.export program or a TorchScript "
                               "model");
    return Applicability::yes();
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    if (value == "python")
      c.cpp_setup = {"// runtime=python: this configuration was measured in Python; the Python "
                     "snippet applies it"};
    return c;
  };
  return k;
}

void adapt_to_python_runtime(Knob& knob) {
  const std::string name = knob.name;
  if (name == "runtime" || !knob.inference) return;
  auto cpp_values = std::move(knob.values);
  auto cpp_baseline = std::move(knob.baseline);
  auto cpp_expert = std::move(knob.expert);
  auto cpp_applies = std::move(knob.applies);
  if (name == "graph") {
    auto cpp_code = std::move(knob.code);
    knob.code = [cpp_code](const std::string& value, bool cuda) {
      if (value != "compile" && value != "compile-max-autotune") return cpp_code(value, cuda);
      KnobCode c;
      // Freezing folds the weights in as constants; Inductor applies it only to a graph first
      // called without autograd (no_grad, inference_mode), as the Python worker runs it.
      c.python_setup = {
          "import torch._inductor.config",
          "torch._inductor.config.freezing = True  # applied when the first call runs without autograd",
          value == "compile" ? "model = torch.compile(model)"
                             : "model = torch.compile(model, mode=\"max-autotune\")",
          "# the first call compiles (torchperf reports its time apart from the run's)"};
      c.cpp_setup = {"// graph=" + value + " is torch.compile: the Python snippet applies it"};
      return c;
    };
  }

  knob.values = [=](const WorkloadTraits& t) {
    if (!t.python_runtime) return cpp_values(t);
    if (name == "graph") return fixed({"eager", "compile", "compile-max-autotune"});
    if (name == "precision")
      return t.cuda ? fixed({"fp32", "bf16-autocast", "fp16-autocast"})
                    : fixed({"fp32", "bf16-autocast"});
    // no_grad and inference_mode differ only by autograd's version counters: a sweep tries
    // inference (the guides' advice); no_grad is taken when asked for.
    if (name == "grad") return fixed({"on", "inference"});
    return cpp_values(t);
  };
  knob.baseline = [=](const WorkloadTraits& t) {
    if (t.python_runtime && name == "graph") return std::string("eager");
    if (t.python_runtime && name == "grad") return std::string("on");
    return cpp_baseline(t);
  };
  knob.expert = [=](const WorkloadTraits& t) {
    if (!t.python_runtime) return cpp_expert(t);
    if (name == "graph") return fixed({"compile"});
    if (name == "precision") return t.cuda ? fixed({"fp16-autocast"}) : fixed({"bf16-autocast"});
    if (name == "grad") return fixed({"inference"});
    if (name == "threads" || name == "batch") return cpp_expert(t);
    if (name == "format") return t.convolutional ? fixed({"channels_last"}) : fixed({});
    return fixed({});
  };
  knob.applies = [=](const WorkloadTraits& t, const std::string& value) {
    if (!t.python_runtime) {
      if (name == "graph" && one_of(value, {"compile", "compile-max-autotune"}))
        return Applicability::no("graph=" + value + " is torch.compile, which runs in Python: "
                                 "it needs runtime=python");
      return cpp_applies(t, value);
    }
    // The allocator is preloaded into the Python worker as into the C++ one (its environment),
    // and the worker's mapped libraries confirm it (PythonSide).
    if (name == "threads" || name == "batch" || name == "allocator") return cpp_applies(t, value);
    if (name == "grad") return Applicability::yes();
    if (name == "graph")
      return one_of(value, {"eager", "compile", "compile-max-autotune"})
                 ? Applicability::yes()
                 : Applicability::no("runtime=python runs graph=eager, compile or "
                                     "compile-max-autotune (torch.compile)");
    if (name == "precision") {
      if (value == "fp32" || value == "bf16-autocast") return Applicability::yes();
      if (value == "fp16-autocast")
        return t.cuda ? Applicability::yes()
                      : Applicability::no("precision=fp16-autocast exists only on CUDA devices");
      return Applicability::no("runtime=python applies autocast (bf16-autocast, fp16-autocast) "
                               "or fp32");
    }
    if (name == "format") {
      if (!t.convolutional) return Applicability::no("the model has no 2-D convolutions");
      if (!t.image_input) return Applicability::no("no input is a 4-D floating tensor");
      return Applicability::yes();
    }
    return Applicability::no(kNotApplied);
  };
}

}  // namespace torchperf
