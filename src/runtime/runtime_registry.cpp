#include <algorithm>

#include "runtimes.h"
#include "torchperf/error.h"
#include "torchperf/runtime/runtime.h"
#include "torchperf/text.h"

namespace torchperf {

WorkloadTraits Runtime::view(const WorkloadTraits& model) const {
  WorkloadTraits v = model;
  v.runtime = name();
  if (form(model) == ModelForm::kProgram) {
    v.torchscript = false;
    v.exported_program = true;
    v.can_train_mode = false;  // a program keeps the mode it was exported in
    v.dynamic_batch = model.program.dynamic;
    v.batch_min = model.program.min;
    v.batch_max = model.program.max;
    v.exported_shape = model.program.shape;
    if (!model.inputs_from_file)
      v.default_batch = model.program.dynamic ? std::max<long long>(1, model.program.min)
                                              : model.program.exported;
  } else {
    v.torchscript = true;
    v.exported_program = false;
    v.dynamic_batch = true;
    v.batch_min = 1;
    v.batch_max = 0;
    v.exported_shape.clear();
  }
  return v;
}

std::optional<Applicability> Runtime::applies(const std::string&, const std::string&,
                                              const WorkloadTraits&) const {
  return std::nullopt;
}
std::optional<std::vector<std::string>> Runtime::values(const std::string&,
                                                        const WorkloadTraits&) const {
  return std::nullopt;
}
std::optional<std::string> Runtime::baseline(const std::string&, const WorkloadTraits&) const {
  return std::nullopt;
}
std::optional<std::vector<std::string>> Runtime::expert(const std::string&,
                                                        const WorkloadTraits&) const {
  return std::nullopt;
}
void Runtime::prepare(const std::string&, Workload&) const {}
std::function<void()> Runtime::enter(const std::string&, bool) const {
  return [] {};
}
Artefact Runtime::artefact(const KnobValues&, const WorkloadTraits&) const { return {}; }
std::vector<std::string> Runtime::training_steps(const WorkloadTraits&) const { return {}; }
Applicability Runtime::trains(const std::string&, const WorkloadTraits&) const {
  return Applicability::no(label() + " does not train");
}

const Runtime& runtime_for_step(const std::string& step) {
  WorkloadTraits everything;
  everything.cuda = true;
  std::string known;
  for (const Runtime* r : runtimes())
    for (const auto& s : r->training_steps(everything)) {
      if (s == step) return *r;
      known += (known.empty() ? "" : ", ") + s;
    }
  throw ConfigError("step '" + step + "': expected " + known);
}

std::vector<std::string> training_steps(const WorkloadTraits& model) {
  std::vector<std::string> out;
  for (const Runtime* r : runtimes())
    for (const auto& s : r->training_steps(model)) out.push_back(s);
  return out;
}

const std::vector<const Runtime*>& runtimes() {
  static const std::vector<const Runtime*> all = {&torchscript_runtime(), &aoti_runtime(),
                                                  &python_eager_runtime(),
                                                  &python_compile_runtime(),
                                                  &python_aoti_runtime(),
                                                  &onnxruntime_runtime(), &openvino_runtime()};
  return all;
}

const Runtime& runtime_named(const std::string& name) {
  for (const Runtime* r : runtimes())
    if (r->name() == name) return *r;
  std::string known;  // spelled out only for the error: a space asks this per knob of each point
  for (const Runtime* r : runtimes()) known += (known.empty() ? "" : ", ") + r->name();
  throw ConfigError("unknown runtime '" + name + "'; known runtimes: " + known);
}

const Runtime& runtime_running(const std::string& graph) {
  // A model every runtime takes, on CUDA: every graph value any runtime runs.
  WorkloadTraits everything;
  everything.cuda = true;
  everything.torchscript_form = true;
  everything.program_form = true;
  everything.named_dims = {"S"};  // the graphs offered only where a dimension varies
  std::string known;
  for (const Runtime* r : runtimes())
    for (const auto& g : r->graphs(r->view(everything))) {
      if (g == graph) return *r;
      known += (known.empty() ? "" : ", ") + g;
    }
  throw ConfigError("graph '" + graph + "': no runtime runs it; known: " + known);
}

std::vector<std::string> runtime_families() {
  std::vector<std::string> out;
  for (const Runtime* r : runtimes())
    if (std::find(out.begin(), out.end(), r->family()) == out.end()) out.push_back(r->family());
  return out;
}

std::vector<const Runtime*> family_runtimes(const std::string& family,
                                            const WorkloadTraits& model) {
  std::vector<const Runtime*> out;
  for (const Runtime* r : runtimes())
    if (r->family() == family && r->accepts(model).applies) out.push_back(r);
  return out;
}

const Runtime& runtime_for(const std::string& family, const std::string& graph,
                           const WorkloadTraits& model) {
  const bool named = !graph.empty() && graph != "n/a";
  if (family == "python") {
    // A package runs in Python where the caller's process loads it (a tune from Python); elsewhere
    // graph=aoti is not Python's, and its points run at Python's own baseline (eager).
    if (named && graph.rfind("aoti", 0) == 0 && python_aoti_runtime().accepts(model).applies)
      return python_aoti_runtime();
    return named && graph.rfind("compile", 0) == 0 ? python_compile_runtime()
                                                   : python_eager_runtime();
  }
  if (family != "cpp" && !family.empty() && family != "n/a") {
    // An engine is a family of one runtime.
    std::string known;
    for (const auto& f : runtime_families()) {
      for (const Runtime* r : runtimes())
        if (f == family && r->family() == family) return *r;
      known += (known.empty() ? "" : ", ") + f;
    }
    throw ConfigError("unknown runtime family '" + family + "' (expected " + known + ")");
  }
  if (named && graph.rfind("aoti", 0) == 0) return aoti_runtime();
  const auto ts = torchscript_runtime().graphs(model);
  if (named && std::find(ts.begin(), ts.end(), graph) != ts.end()) return torchscript_runtime();
  // No graph value, or one of no C++ runtime (compile: torch.compile's): the model's own.
  return model.torchscript_form || !model.program_form ? torchscript_runtime() : aoti_runtime();
}

const Runtime& runtime_of_key(const std::string& key) {
  std::string family = "cpp", graph;
  for (const auto& pair : split(key, ',')) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = trim(pair.substr(0, eq)), value = trim(pair.substr(eq + 1));
    if (name == "runtime") family = value;
    if (name == "graph") graph = value;
  }
  // A key names what ran: one with runtime=python and graph=aoti came from a tune from Python.
  WorkloadTraits unknown;
  unknown.program_form = true;
  unknown.caller_module = true;
  unknown.named_dims = {"S"};
  return runtime_for(family, graph, unknown);
}

}  // namespace torchperf
