// One type per way to run a model: TorchScript and AOTInductor in C++, eager and torch.compile in
// Python (their CUDA-graph variants: the cuda_graphs knob in C++, compile's reduce-overhead and
// max-autotune modes in Python), and the engines a program converts to (ONNX Runtime, OpenVINO). A runtime says which models it takes, which knob values apply
// to it and why not, how it prepares a point, which worker runs it, and the lines that apply it.
// Callers ask the runtime; none compares its name (pytorch/benchmark's backends, registered by
// name, each parsing its own options, are the model).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/models/aoti_package.h"
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

// What a point of a runtime leaves behind so that it runs again without paying its preparation,
// and who pays it: nothing; a package the tune compiles before the point (AOTInductor); or a
// compile inside the point's own worker (torch.compile, whose kernels Inductor caches).
enum class ArtefactKind { kNone, kPackage, kWorkerCompile };
struct Artefact {
  ArtefactKind kind = ArtefactKind::kNone;
  // Its name within the runtime, the compile history's key: the package's options, or the
  // torch.compile mode's graph value.
  std::string name;
  // The artefact of the runtime's plain mode: its history prices this one, scaled, before this
  // one has been compiled.
  std::string plain;
  bool autotunes = false;  // kernel choices benchmarked while compiling: about 3x as long
  AotiOptions package;     // kPackage: what to compile
};

// A resolved configuration's knob values by name ("n/a" where a knob does not apply): what a
// runtime reads to say what a point needs, without depending on the configuration part.
using KnobValues = std::function<std::string(const std::string& knob)>;

// One of torch.compile's modes as a graph value: the Python runtime's and the Python training
// step's one table (`torchperf __protocol` prints it for the Python side).
struct CompileMode {
  const char* graph;
  const char* mode;   // torch.compile's mode=, nullptr for its default
  bool cuda_only;     // exists only where CUDA graphs do
  bool cuda_graphs;   // replays CUDA graphs on CUDA
  bool trains;        // offered for the training step
  bool autotunes;     // benchmarks kernel choices while compiling
  // torch.compile's dynamic= (nullptr: its default, automatic: static first, then dynamic after a
  // recompile), "on" (dynamic=True) or "off" (dynamic=False: a graph per shape, up to its
  // recompile limit); offered only where a dimension varies (--dim), as one shape compiles
  // static whatever dynamic= says.
  const char* dynamic = nullptr;
  bool varying_only = false;
};
const std::vector<CompileMode>& compile_modes();
// The mode a graph value names; nullptr for a graph that is not torch.compile's.
const CompileMode* compile_mode(const std::string& graph);

// One of an engine's ways to run a model converted from its torch.export program, as a graph value:
// the engine runtimes' one table (`torchperf __protocol` prints it for the Python side, which
// applies it: python/torchperf/engine_graphs.py).
struct EngineGraph {
  const char* graph;   // ort, ort-basic, openvino, ...
  const char* engine;  // the runtime that runs it: onnxruntime | openvino
  // ONNX Runtime: its graph optimisation level (all | extended | basic), its parallel execution
  // mode (operators side by side on inter-op threads), and its CPU memory arena.
  const char* level;
  bool parallel;
  bool arena;
  // OpenVINO: its performance hint (LATENCY | THROUGHPUT), which sets its streams and threads,
  // and whether the IR is reshaped to the inputs' own shapes and compiled once per shape met
  // (static shapes let the CPU plugin pick its kernels for them; a dynamic batch does not).
  const char* hint;
  bool static_shapes;
};
const std::vector<EngineGraph>& engine_graphs();
// The engine graph a value names; nullptr for a graph of no engine.
const EngineGraph* engine_graph(const std::string& graph);

class Runtime {
 public:
  virtual ~Runtime() = default;
  // Its name in the registry and in reports: torchscript, aoti, python-eager, python-compile,
  // onnxruntime, openvino.
  virtual std::string name() const = 0;
  // In tables: "C++ TorchScript", "C++ AOTInductor", "Python eager", "Python torch.compile".
  virtual std::string label() const = 0;
  // The value of the runtime knob that selects its family: cpp, python, or an engine's own name.
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
  // What a point needs prepared, from its resolved knob values and the model as this runtime
  // sees it.
  virtual Artefact artefact(const KnobValues& value, const WorkloadTraits& view) const;

  // Training (the step knob's values): who runs the step in this runtime, "torchscript" in
  // torchperf's own process, or in the Python training worker "eager" or a torch.compile mode;
  // none where the runtime does not train. Most promising last.
  virtual std::vector<std::string> training_steps(const WorkloadTraits& model) const;
  // Whether this runtime trains the model with `step`, and why not.
  virtual Applicability trains(const std::string& step, const WorkloadTraits& model) const;
  // C++ runtimes: transforms the workload for `graph` (freezing; compiling the package). The
  // Python runtimes are prepared in their worker (python_settings.py).
  virtual void prepare(const std::string& graph, Workload& workload) const;
  // Process state `graph` needs while it runs here (TorchScript's CPU fuser), set once per
  // measurement; the function returned restores what was.
  virtual std::function<void()> enter(const std::string& graph, bool cuda) const;
  // Whether `graph` folds the training flag into constants (freezing): it needs eval mode.
  virtual bool freezes(const std::string& graph) const { return false; }
  // Whether `graph` takes another knob's `value`, where the pair fails though each applies alone:
  // a graph compiled per shape meets only as many padded widths as it may recompile for;
  // TorchScript's optimize_for_inference on CUDA fuses what autocast does not cast.
  virtual Applicability graph_takes(const std::string& graph, const std::string& knob,
                                    const std::string& value, const WorkloadTraits& view) const {
    return Applicability::yes();
  }
  // The lines that apply `graph` in user code.
  virtual RuntimeSnippet snippet(const std::string& graph, bool cuda) const = 0;
  // The lines that apply another knob's `value` where this runtime's are not the registry's (ONNX
  // Runtime's int8 is its own quantization, not PT2E); nullopt: the registry's. They follow the
  // graph's lines and the example inputs.
  virtual std::optional<RuntimeSnippet> knob_snippet(const std::string& knob,
                                                     const std::string& value) const {
    return std::nullopt;
  }
};

// Every runtime, in the order reports list them.
const std::vector<const Runtime*>& runtimes();
// Throws ConfigError naming the runtimes.
const Runtime& runtime_named(const std::string& name);
// The runtime of `family` (the runtime knob's value: cpp | python | an engine) that runs `graph` ("" or
// "n/a": the family's own baseline for this model). Within a family the graph value decides
// (aoti* is AOTInductor, compile* torch.compile); without one, the model's forms do (a
// TorchScript graph runs in TorchScript). Throws ConfigError for an unknown family.
const Runtime& runtime_for(const std::string& family, const std::string& graph,
                           const WorkloadTraits& model);
// The runtime that runs `graph`, whatever its family (ConfigError naming them for a value none
// runs): what a graph value's preparation and snippet are asked of.
const Runtime& runtime_running(const std::string& graph);
// The runtime knob's values: each family once, in registry order (the first is the baseline).
std::vector<std::string> runtime_families();
// The runtimes of a family that take the model.
std::vector<const Runtime*> family_runtimes(const std::string& family, const WorkloadTraits& model);
// The runtime whose training_steps() include `step`, and every step value of the runtimes, in
// registry order (ConfigError naming them for an unknown one).
const Runtime& runtime_for_step(const std::string& step);
std::vector<std::string> training_steps(const WorkloadTraits& model);
// The runtime a resolved configuration string (a journal key, "runtime=python,graph=compile,…")
// names, for readers that have no model at hand: a key without runtime is C++, and C++ without a
// graph value is TorchScript.
const Runtime& runtime_of_key(const std::string& key);

}  // namespace torchperf
