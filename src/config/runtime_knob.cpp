#include "runtime_knob.h"

#include <algorithm>
#include <utility>

#include "process_knobs.h"

namespace torchperf {

Knob runtime_knob() {
  Knob k;
  k.name = "runtime";
  k.description =
      "who runs the model: cpp (LibTorch in torchperf's C++ worker: TorchScript, or AOTInductor "
      "for a torch.export program or a built-in), python (PyTorch in the .venv's Python, in a "
      "worker of its own: eager or torch.compile), or an engine the program converts to, where "
      "the .venv has it: onnxruntime (ONNX Runtime), openvino (OpenVINO); the graph value picks "
      "the runtime within it; the threads, the statistics, the reference and the guard are the "
      "same";
  // A runtime is a process of its own: two sides that differ in it run in two processes.
  k.scope = KnobScope::kWorker;
  k.listed_at_baseline = false;  // configurations written before it keep their names
  k.values = [](const WorkloadTraits&) { return runtime_families(); };
  // A model that comes as a torch.export program (a .pt2, a built-in) is tuned in both: the
  // choice between staying in Python with torch.compile and running from C++ is what its user
  // faces. A TorchScript file runs in Python only when --space names it (torch.compile does not
  // trace a ScriptModule, so only eager would be tried).
  k.swept_by_default = [](const WorkloadTraits& t) { return t.program_form; };
  k.baseline = [](const WorkloadTraits&) { return runtime_families().front(); };
  // The GPU guides end with torch.compile and CUDA graphs: on CUDA a tune's expert start is in
  // the family whose expert graph replays CUDA graphs (Python's compile-reduce-overhead).
  k.expert = [](const WorkloadTraits& t) {
    std::vector<std::string> out;
    if (!t.cuda || !t.program_form) return out;
    for (const Runtime* r : runtimes()) {
      if (!r->accepts(t).applies) continue;
      for (const auto& graph : r->expert_graphs(r->view(t)))
        if (r->captures_cuda_graphs(graph, true) &&
            std::find(out.begin(), out.end(), r->family()) == out.end())
          out.push_back(r->family());
    }
    return out;
  };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    const auto runtimes = family_runtimes(value, t);
    if (runtimes.empty())
      return runtime_for(value, "", t).accepts(t);  // its reason
    return Applicability::yes();
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    if (runtime_for(value, "", WorkloadTraits{}).worker() == RuntimeWorker::kPython)
      c.cpp_setup = {"// runtime=" + value + ": this configuration was measured in Python; the "
                     "Python snippet applies it"};
    return c;
  };
  return k;
}

const Runtime& viewing_runtime(const WorkloadTraits& traits) {
  return traits.runtime.empty() ? runtime_for("", "", traits) : runtime_named(traits.runtime);
}

namespace {

// Calls `use` with the traits as a runtime sees them: those given where a runtime has viewed them
// already (every point of a space; no copy), else the default runtime's view of them.
template <typename Use>
auto on_view(const WorkloadTraits& traits, Use use) {
  if (!traits.runtime.empty()) return use(traits);
  return use(runtime_for("", "", traits).view(traits));
}

}  // namespace

void let_runtime_decide(Knob& knob) {
  const std::string name = knob.name;
  if (name == "runtime" || !knob.inference) return;
  auto own_values = std::move(knob.values);
  auto own_baseline = std::move(knob.baseline);
  auto own_expert = std::move(knob.expert);
  auto own_applies = std::move(knob.applies);
  knob.values = [=](const WorkloadTraits& t) {
    return on_view(t, [&](const WorkloadTraits& v) {
      if (auto mine = viewing_runtime(v).values(name, v)) return *mine;
      return own_values(v);
    });
  };
  knob.baseline = [=](const WorkloadTraits& t) {
    return on_view(t, [&](const WorkloadTraits& v) {
      if (auto mine = viewing_runtime(v).baseline(name, v)) return *mine;
      return own_baseline(v);
    });
  };
  knob.expert = [=](const WorkloadTraits& t) {
    return on_view(t, [&](const WorkloadTraits& v) {
      if (auto mine = viewing_runtime(v).expert(name, v)) return *mine;
      return own_expert(v);
    });
  };
  knob.applies = [=](const WorkloadTraits& t, const std::string& value) {
    return on_view(t, [&](const WorkloadTraits& v) {
      if (auto mine = viewing_runtime(v).applies(name, value, v)) return *mine;
      return own_applies(v, value);
    });
  };
}

}  // namespace torchperf
