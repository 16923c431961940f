#include "torchperf/config/configuration.h"
#include "torchperf/runtime/runtime.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/text.h"

namespace torchperf {
namespace {

bool is_integer_at_least(const std::string& s, long long least) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), ::isdigit) &&
         std::stoll(s) >= least;
}

// A registered knob's values: all_values walks every runtime's view of four kinds of model, and a
// space sets each knob of each point (thousands: 5 s for a CUDA space). The registry is fixed, so
// its values are walked once; a knob outside it (a test's) is walked each time.
const std::vector<std::string>& values_of(const Knob& knob, std::vector<std::string>& scratch) {
  static const std::map<const Knob*, std::vector<std::string>> registered = [] {
    std::map<const Knob*, std::vector<std::string>> out;
    for (const auto& k : knob_registry())
      if (!k.integer_valued && !k.check_form) out[&k] = all_values(k);
    return out;
  }();
  if (const auto it = registered.find(&knob); it != registered.end()) return it->second;
  scratch = all_values(knob);
  return scratch;
}

void check_value(const Knob& knob, const std::string& value) {
  if (knob.integer_valued) {
    if (!value.empty() && value.size() >= 10 && std::all_of(value.begin(), value.end(), ::isdigit))
      throw ConfigError("knob '" + knob.name + "': " + value + " is too large (at most 999999999)");
    if (!is_integer_at_least(value, knob.min_integer))
      throw ConfigError("knob '" + knob.name + "' expects " + describe_integer(knob) + ", got '" +
                        value + "'");
    return;
  }
  if (knob.check_form) {
    knob.check_form(value);
    return;
  }
  std::vector<std::string> scratch;
  const auto& values = values_of(knob, scratch);
  if (std::find(values.begin(), values.end(), value) == values.end()) {
    std::string list, missing;
    for (const auto& v : values) {
      // A worker knob's values depend on what is installed here: say which are.
      const bool here = knob.scope != KnobScope::kWorker || knob.applies(WorkloadTraits{}, v).applies;
      (here ? list : missing) += ((here ? list : missing).empty() ? "" : ", ") + v;
    }
    throw ConfigError("knob '" + knob.name + "' has no value '" + value + "'; expected one of " +
                      list + (knob.scope == KnobScope::kWorker ? " (installed here)" : "") +
                      (missing.empty() ? "" : "; not installed here: " + missing));
  }
}

}  // namespace

Configuration Configuration::parse(const std::string& text) {
  Configuration config;
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    item = trim(item);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw ConfigError("configuration '" + text +
                        "': expected knob=value items separated by commas, got '" + item + "'");
    const std::string name = trim(item.substr(0, eq));
    if (config.get(name))
      throw ConfigError("configuration '" + text + "': knob '" + name + "' is given twice");
    config.set(name, trim(item.substr(eq + 1)));
  }
  return config;
}

void Configuration::set(const std::string& knob, const std::string& value) {
  check_value(find_knob(knob), value);
  values_[knob] = value;
}

std::optional<std::string> Configuration::get(const std::string& knob) const {
  const auto it = values_.find(knob);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Configuration::to_string() const {
  std::string out;
  for (const auto& knob : knob_registry())
    if (auto v = get(knob.name)) out += (out.empty() ? "" : ",") + knob.name + "=" + *v;
  return out;
}

const ResolvedKnob& ResolvedConfiguration::knob(const std::string& name) const {
  for (const auto& k : knobs)
    if (k.name == name) return k;
  throw ConfigError("unknown knob '" + name + "'");
}

std::string ResolvedConfiguration::to_string() const {
  std::string out;
  for (const auto& k : knobs)
    if (k.applicable && (k.requested || find_knob(k.name).listed_at_baseline))
      out += (out.empty() ? "" : ",") + k.name + "=" + k.value;
  return out;
}

namespace {

// Refuses knobs that the command does not read (a training knob given to bench, say).
void check_used(const Configuration& requested, bool Knob::*use, const std::string& command,
                const std::string& elsewhere) {
  for (const auto& [name, value] : requested.values())
    if (!(find_knob(name).*use))
      throw ConfigError(name + "=" + value + " is not a knob of " + command + " (it belongs to " +
                        elsewhere + ")");
}

ResolvedKnob resolve_knob(const Knob& knob, const Configuration& requested,
                          const WorkloadTraits& traits) {
  ResolvedKnob r;
  r.name = knob.name;
  if (auto value = requested.get(knob.name)) {
    const Applicability a = knob.applies(traits, *value);
    if (!a.applies)
      throw ConfigError(knob.name + "=" + *value + " does not apply to this workload: " + a.reason);
    r.value = *value;
    r.requested = true;
    r.baseline = r.value == knob.baseline(traits);
  } else {
    r.baseline = true;
    r.value = knob.baseline(traits);
    const Applicability a = knob.applies(traits, r.value);
    if (!a.applies) {
      r.applicable = false;
      r.reason = a.reason;
      r.value = "n/a";
    }
  }
  return r;
}

}  // namespace

ResolvedConfiguration resolve_training(const Configuration& requested,
                                       const WorkloadTraits& traits) {
  check_used(requested, &Knob::training, "train", "bench and tune");
  ResolvedConfiguration resolved;
  for (const auto& knob : training_knobs())
    resolved.knobs.push_back(resolve_knob(knob, requested, traits));
  if (resolved.value("workers") == "0" && requested.get("prefetch"))
    resolved.notes.push_back("prefetch has no effect with workers=0 (batches are made on demand)");
  if (resolved.value("non_blocking") == "on" && resolved.value("pin_memory") != "on")
    resolved.notes.push_back(
        "non_blocking=on without pin_memory=on: a copy from pageable memory is still synchronous");
  return resolved;
}

TrainingPlan plan_training(const ResolvedConfiguration& config) {
  TrainingPlan plan;
  for (const auto& knob : training_knobs()) {
    const auto& resolved = config.knob(knob.name);
    if (resolved.applicable) knob.plan(resolved.value, plan);
  }
  return plan;
}

ResolvedConfiguration resolve(const Configuration& requested, const WorkloadTraits& traits) {
  check_used(requested, &Knob::inference, "bench or tune", "train");
  ResolvedConfiguration resolved;
  // The runtime decides what the other knobs mean (runtime/runtime.h): it is resolved first
  // (the runtime knob's family, and within it the graph value asked for), and the rest as it
  // sees the model.
  const ResolvedKnob family = resolve_knob(find_knob("runtime"), requested, traits);
  const Runtime& runtime = runtime_for(family.applicable ? family.value : "",
                                       requested.get("graph").value_or(""), traits);
  if (const Applicability a = runtime.accepts(traits); !a.applies)
    throw ConfigError((requested.get("graph") ? "graph=" + *requested.get("graph")
                                              : "runtime=" + family.value) +
                      " does not apply to this workload: " + runtime.label() + " " + a.reason);
  const WorkloadTraits for_runtime = runtime.view(traits);
  for (const auto& knob : inference_knobs())
    resolved.knobs.push_back(knob.name == "runtime" ? family
                                                    : resolve_knob(knob, requested, for_runtime));
  // Freezing folds the training flag and batch-norm statistics into constants: it needs eval mode.
  const std::string graph = resolved.value("graph");
  if (runtime.freezes(graph)) {
    for (auto& k : resolved.knobs) {
      if (k.name != "mode" || !k.applicable || k.value == "eval") continue;
      if (k.requested)
        throw ConfigError("graph=" + graph +
                          " needs mode=eval (freezing folds the training flag), but "
                          "mode=train was asked for");
      k.value = "eval";
      k.reason = "graph=" + graph + " needs eval mode";
      resolved.notes.push_back("requested mode=train (as saved) with graph=" + graph +
                               "; using mode=eval");
    }
  }
  // PT2E's int8 is lowered to int8 kernels by Inductor's freezing, which a graph first called
  // under autograd does not get: with grad=on it would time fp32 reference operators.
  for (auto& k : resolved.knobs) {
    if (k.name != "grad" || !k.applicable || k.value != "on" ||
        resolved.value("precision") != "int8-static")
      continue;
    if (k.requested)
      throw ConfigError("precision=int8-static needs grad=inference or no_grad (Inductor lowers "
                        "it to int8 kernels only when freezing, without autograd), but grad=on "
                        "was asked for");
    k.value = "inference";
    k.reason = "precision=int8-static needs it";
  }
  for (const auto& k : resolved.knobs)
    if (k.applicable && k.name != "runtime" && k.name != "graph")
      if (const Applicability a = runtime.graph_takes(graph, k.name, k.value, for_runtime);
          !a.applies)
        throw ConfigError(a.reason);
  return resolved;
}

const Runtime& runtime_of(const ResolvedConfiguration& config, const WorkloadTraits& traits) {
  const ResolvedKnob& family = config.knob("runtime");
  return runtime_for(family.applicable ? family.value : "", config.value("graph"), traits);
}

RuntimeWorker worker_of(const Configuration& config) {
  return runtime_for(config.get("runtime").value_or(""), config.get("graph").value_or(""),
                     WorkloadTraits{})
      .worker();
}

Configuration named_or_parsed(const std::string& text) {
  if (text == "baseline") return Configuration();
  if (text == "careful") return Configuration::parse("mode=eval,grad=no_grad");
  return Configuration::parse(text);
}

}  // namespace torchperf
