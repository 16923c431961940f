// A knob is declared once, in the registry (knob_registry.cpp), with this type: its name, values,
// when it applies, how it is applied and undone; where a runtime decides (graph, step, and what
// each runtime makes of the others), the declaration asks the runtime. CLI flags, configuration
// strings, sweeps and reports all read these declarations.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "torchperf/config/training_plan.h"
#include "torchperf/models/workload_traits.h"

namespace torchperf {

struct Workload;

// Where a knob acts. Every knob may also prepare() the workload once, before timing (transform
// the model and inputs). A call knob is entered around every forward call, inside the timed
// region, as user code wraps each call (grad mode, autocast). A process knob sets process-wide
// state once per measurement, before warm-up (threads, fuser flags); two sides that differ in it
// run in two processes. A worker knob can only be chosen when a process starts (the allocator,
// the BLAS library, OpenMP's behaviour): the supervisor sets environment() for a fresh worker,
// and confirm() checks from inside that it took.
enum class KnobScope { kCall, kProcess, kWorker };
std::string to_string(KnobScope scope);

// Thread counts (intra-op, inter-op, loader threads) apply up to 4x the usable cores: beyond
// that they only oversubscribe. what names the threads in the reason ("inter-op threads").
Applicability at_most_four_per_core(const WorkloadTraits& traits, const std::string& value,
                                    const std::string& what);

using Undo = std::function<void()>;

// Runs an Undo when the scope ends, by return or by exception.
class ScopeExit {
 public:
  explicit ScopeExit(Undo undo) : undo_(std::move(undo)) {}
  ~ScopeExit() { undo_(); }
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;

 private:
  Undo undo_;
};

// How a user applies one knob value in their own program, for the snippets `report` writes.
// Statements name the model `module` (C++, a torch::jit::Module) and `model` (Python); tensor
// suffixes apply to each floating input (and only 4-D ones with only_4d).
struct KnobCode {
  std::vector<std::string> cpp_includes;
  std::vector<std::string> cpp_declarations;         // file scope, after the includes
  std::vector<std::string> cpp_setup, python_setup;  // once, after loading, in registry order
  std::string cpp_tensor, python_tensor;             // e.g. ".to(torch::kBFloat16)"
  bool only_4d = false;
  std::string cpp_guard, python_with;  // around each call: an RAII statement, a `with` item
  std::vector<std::string> environment;  // NAME=VALUE set before the program starts (worker knobs)
};

struct Knob {
  std::string name;
  std::string description;
  KnobScope scope = KnobScope::kCall;
  // Which commands read it: bench and tune (inference), train, or both.
  bool inference = true;
  bool training = false;
  // A training knob that changes what is learned, not only how fast (batch size, precision): the
  // ladder takes it only with --allow-semantic-changes.
  bool changes_training = false;
  // Any positive integer is accepted (threads, batch); values() then lists what a sweep tries.
  bool integer_valued = false;
  long long min_integer = 1;  // workers may be 0
  std::function<std::vector<std::string>(const WorkloadTraits&)> values;
  // A knob whose values have a grammar (padding=buckets:32/64/512) rather than a list: throws
  // ConfigError for a value outside it, and values() lists only what a sweep tries.
  std::function<void(const std::string& value)> check_form;
  // The value a user gets by just calling forward after loading the model.
  std::function<std::string(const WorkloadTraits&)> baseline;
  std::function<Applicability(const WorkloadTraits&, const std::string& value)> applies;
  // What the performance guides tell users to try, most promising first (every core, a big
  // batch, inference_mode, autocast, channels_last for convolutions, a frozen graph): tune's
  // smart search screens around the point they make, because such settings often pay only
  // together. Empty: the guides give no advice.
  std::function<std::vector<std::string>(const WorkloadTraits&)> expert =
      [](const WorkloadTraits&) { return std::vector<std::string>{}; };
  // For model knobs: transform the workload's own copy of the model and inputs.
  std::function<void(const std::string& value, Workload&)> prepare = [](const std::string&,
                                                                        Workload&) {};
  // Set the state for a call or a block and return what restores it.
  std::function<Undo(const std::string& value, const Workload&)> enter =
      [](const std::string&, const Workload&) { return Undo([] {}); };
  // Worker knobs: the environment variables a fresh worker process gets for a value (an empty
  // string unsets the variable); applied by the supervisor before exec.
  std::function<std::map<std::string, std::string>(const std::string& value)> environment =
      [](const std::string&) { return std::map<std::string, std::string>{}; };
  // Worker knobs, inside the worker before anything is measured: applies what can only be
  // applied at start-up and returns what the process shows (the library loaded, the variable
  // seen). Throws ConfigError, naming what the loader or runtime said, when the value did not
  // take.
  std::function<std::string(const std::string& value)> confirm = [](const std::string& value) {
    return value;
  };
  // Whether a default sweep tries the knob's applicable values for this workload; process-level
  // knobs multiply the space and are swept only when --space names them (runtime: a torch.export
  // program's default tries both runtimes).
  std::function<bool(const WorkloadTraits&)> swept_by_default = [](const WorkloadTraits&) {
    return true;
  };
  // Why a default sweep leaves a value out on this workload ("" keeps it): threads on a CUDA
  // device (the GPU does the work), mode=train in an inference tune. --space names it to sweep it.
  std::function<std::string(const WorkloadTraits&, const std::string& value)> left_out_of_sweep =
      [](const WorkloadTraits&, const std::string&) { return std::string(); };
  // A configuration string lists the knob even when it was left at its baseline; worker knobs
  // appear only when asked for (a swept axis always asks), so that configurations written before
  // they existed keep their names.
  bool listed_at_baseline = true;
  // For training knobs: how the value sets up the training loop.
  std::function<void(const std::string& value, TrainingPlan&)> plan = [](const std::string&,
                                                                        TrainingPlan&) {};
  // The same in user code (C++ and Python), on a CUDA device or on the CPU; the baseline value
  // needs nothing.
  std::function<KnobCode(const std::string& value, bool cuda)> code = [](const std::string&,
                                                                         bool) {
    return KnobCode{};
  };
};

// All knobs, in the order they are applied (mode before graph, precision before format …).
const std::vector<Knob>& knob_registry();
// The knobs bench and tune read, and those train reads, in registry order.
const std::vector<Knob>& inference_knobs();
const std::vector<Knob>& training_knobs();
// Throws ConfigError naming the known knobs.
const Knob& find_knob(const std::string& name);
// The values a knob may take anywhere (CUDA included); for integer-valued knobs, only an example:
// any positive integer is accepted.
std::vector<std::string> all_values(const Knob& knob);
struct RuntimeSnippet;
// A runtime's lines (a graph's, or its own for another knob's value) as a knob's code.
KnobCode code_of(const RuntimeSnippet& snippet);
// "a positive integer" or "an integer >= 0", for messages and help.
std::string describe_integer(const Knob& knob);

}  // namespace torchperf
