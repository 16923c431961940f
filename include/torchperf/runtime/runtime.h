// One type per way to run a model: TorchScript and AOTInductor in C++, eager and torch.compile in
// Python (their CUDA-graph variants: the cuda_graphs knob in C++, compile's reduce-overhead and
// max-autotune modes in Python). A runtime says which models it takes, which knob values apply
// to it and why not, how it prepares a point, which worker runs it, and the lines that apply it.
// Callers ask the runtime; none compares its name (pytorch/benchmark's backends, registered by
// name, each parsing its own options, are the model).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "torchperf/models/workload_traits.h"

namespace torchperf {

struct Workload;

// The process a runtime's points run in: torchperf's C++ worker (LibTorch), or the Python worker
// (PyTorch in the venv's Python, python/torchperf/worker.py).
enum class RuntimeWorker { kCpp, kPython };

// Which file of a model a runtime runs.
enum class ModelForm { kTorchScript, kProgram };

// The lines that apply a runtime's graph value in user code (report's snippets).
struct RuntimeSnippet {
  std::vector<std::string> cpp_includes, cpp_declarations;
  std::vector<std::string> python_setup, cpp_setup;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  // Its name in the registry and in reports: torchscript, aoti, python-eager, python-compile.
  virtual std::string name() const = 0;
  // In tables: "C++ TorchScript", "C++ AOTInductor", "Python eager", "Python torch.compile".
  virtual std::string label() const = 0;
  // The value of the runtime knob that selects its family: cpp or python.
  virtual std::string family() const = 0;
  virtual RuntimeWorker worker() const = 0;
  // Whether it takes the model (by the forms it comes in), and why not.
  virtual Applicability accepts(const WorkloadTraits& model) const = 0;
  // The file it runs, of those the model has.
  virtual ModelForm form(const WorkloadTraits& model) const = 0;
  // The model as it sees it: its form's facts in the flat fields knobs read (torchscript,
  // exported_program, the batch range), and its name in `runtime`.
  virtual WorkloadTraits view(const WorkloadTraits& model) const;
  // The values of the graph knob it runs (its ways to prepare a model); the first is its
  // baseline. Those the guides favour, most promising first.
  virtual std::vector<std::string> graphs(const WorkloadTraits& view) const = 0;
  virtual std::vector<std::string> expert_graphs(const WorkloadTraits& view) const = 0;
  // What it makes of another knob: nullopt leaves the knob's own declaration to decide.
  virtual std::optional<Applicability> applies(const std::string& knob, const std::string& value,
                                               const WorkloadTraits& view) const;
  virtual std::optional<std::vector<std::string>> values(const std::string& knob,
                                                         const WorkloadTraits& view) const;
  virtual std::optional<std::string> baseline(const std::string& knob,
                                              const WorkloadTraits& view) const;
  virtual std::optional<std::vector<std::string>> expert(const std::string& knob,
                                                         const WorkloadTraits& view) const;
  // Whether preparing `graph` compiles: a point pays it once, reported apart from its run time,
  // and a search weighs it before paying it.
  virtual bool compiles(const std::string& graph) const = 0;
  // Whether `graph` replays CUDA graphs (Python's reduce-overhead and max-autotune on CUDA).
  virtual bool captures_cuda_graphs(const std::string& graph, bool cuda) const { return false; }
  // C++ runtimes: transforms the workload for `graph` (freezing; compiling the package). The
  // Python runtimes are prepared in their worker (python_settings.py).
  virtual void prepare(const std::string& graph, Workload& workload) const;
  // The lines that apply `graph` in user code.
  virtual RuntimeSnippet snippet(const std::string& graph, bool cuda) const = 0;
  // What it leaves behind to run again without paying its preparation: "" for nothing.
  virtual std::string artefact(const std::string& graph) const = 0;
};

// Every runtime, in the order reports list them.
const std::vector<const Runtime*>& runtimes();
// Throws ConfigError naming the runtimes.
const Runtime& runtime_named(const std::string& name);
// The runtime of `family` (the runtime knob's value: cpp | python) that runs `graph` ("" or
// "n/a": the family's own baseline for this model). Within a family the graph value decides
// (aoti* is AOTInductor, compile* torch.compile); without one, the model's forms do (a
// TorchScript graph runs in TorchScript). Throws ConfigError for an unknown family.
const Runtime& runtime_for(const std::string& family, const std::string& graph,
                           const WorkloadTraits& model);
// The runtimes of a family that take the model.
std::vector<const Runtime*> family_runtimes(const std::string& family, const WorkloadTraits& model);
// The runtime a resolved configuration string (a journal key, "runtime=python,graph=compile,…")
// names, for readers that have no model at hand: a key without runtime is C++, and C++ without a
// graph value is TorchScript.
const Runtime& runtime_of_key(const std::string& key);

}  // namespace torchperf
