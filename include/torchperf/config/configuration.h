// A configuration: one value per knob, printed and parsed as one short string such as
// "threads=2,grad=inference,precision=bf16-autocast". Requested configurations name only some
// knobs; resolving one against a workload fills in baselines and marks what does not apply.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "torchperf/config/training_plan.h"
#include "torchperf/models/workload_traits.h"
#include "torchperf/runtime/runtime.h"

namespace torchperf {

class Configuration {
 public:
  // "" is the empty configuration; knob names and values are checked against the registry.
  static Configuration parse(const std::string& text);

  void set(const std::string& knob, const std::string& value);
  std::optional<std::string> get(const std::string& knob) const;
  bool empty() const { return values_.empty(); }
  const std::map<std::string, std::string>& values() const { return values_; }
  // Knobs in registry order.
  std::string to_string() const;

 private:
  std::map<std::string, std::string> values_;
};

struct ResolvedKnob {
  std::string name;
  std::string value;  // "n/a" when it does not apply
  bool applicable = true;
  bool requested = false;  // named by the user, not a baseline
  std::string reason;      // why not applicable, or why a value was chosen for the user
  bool baseline = false;   // the value is the knob's baseline for this workload
};

struct ResolvedConfiguration {
  std::vector<ResolvedKnob> knobs;  // every registered knob, registry order
  std::vector<std::string> notes;   // "requested … using …" adjustments

  const ResolvedKnob& knob(const std::string& name) const;
  std::string value(const std::string& name) const { return knob(name).value; }
  // The applicable knobs only, e.g. "threads=1,batch=8,mode=eval,…".
  std::string to_string() const;
};

// Fills in baselines, checks values, refuses a knob forced where it does not apply (ConfigError)
// and settles dependencies between knobs (a frozen graph needs eval mode).
// Over the inference knobs (bench, tune); a training-only knob is a ConfigError.
ResolvedConfiguration resolve(const Configuration& requested, const WorkloadTraits& traits);
// The same over the training knobs (train); an inference-only knob is a ConfigError.
ResolvedConfiguration resolve_training(const Configuration& requested,
                                       const WorkloadTraits& traits);
// What the training knobs' values mean for the loop (each knob's plan(), registry order).
TrainingPlan plan_training(const ResolvedConfiguration& config);

// The runtime a resolved configuration runs in (its runtime and graph values, the model's forms).
const Runtime& runtime_of(const ResolvedConfiguration& config, const WorkloadTraits& traits);
// The worker a requested configuration runs in, from its runtime value alone (a family has one
// worker): what a supervisor asks before it has described the model.
RuntimeWorker worker_of(const Configuration& config);

// Named configurations: "baseline" (nothing changed) and "careful" (eval + no_grad, where a careful
// user starts); anything else is parsed as a configuration string.
Configuration named_or_parsed(const std::string& text);

}  // namespace torchperf
