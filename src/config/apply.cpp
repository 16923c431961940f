#include "torchperf/config/apply.h"

#include <vector>

namespace torchperf {

void prepare_workload(const ResolvedConfiguration& config, Workload& workload) {
  for (const auto& knob : inference_knobs()) {
    const auto& resolved = config.knob(knob.name);
    if (resolved.applicable) knob.prepare(resolved.value, workload);
  }
}

StreamPolicy stream_policy_of(const ResolvedConfiguration& config, StreamPolicy given) {
  if (const auto& k = config.knob("batch"); k.applicable) given.batch = std::stoll(k.value);
  if (const auto& k = config.knob("padding"); k.applicable) given.padding = parse_padding(k.value);
  if (const auto& k = config.knob("batching"); k.applicable)
    given.batching = parse_batching(k.value);
  return given;
}

Undo enter_scope(const ResolvedConfiguration& config, const Workload& workload, KnobScope scope) {
  auto undos = std::make_shared<std::vector<Undo>>();
  for (const auto& knob : inference_knobs()) {
    if (knob.scope != scope) continue;
    const auto& resolved = config.knob(knob.name);
    if (!resolved.applicable) continue;
    try {
      undos->push_back(knob.enter(resolved.value, workload));
    } catch (...) {
      for (auto it = undos->rbegin(); it != undos->rend(); ++it) (*it)();
      throw;
    }
  }
  return [undos] {
    for (auto it = undos->rbegin(); it != undos->rend(); ++it) (*it)();
  };
}

std::vector<std::string> process_state_differences(const Configuration& a, const Configuration& b) {
  std::vector<std::string> out;
  for (const auto& knob : knob_registry()) {  // train's configurations too
    if (knob.scope == KnobScope::kCall) continue;
    const auto va = a.get(knob.name), vb = b.get(knob.name);
    if (va != vb)
      out.push_back(knob.name + "=" + va.value_or("(baseline)") + " vs " +
                    vb.value_or("(baseline)"));
  }
  return out;
}

std::vector<std::string> worker_knobs_named(const Configuration& config) {
  std::vector<std::string> out;
  for (const auto& knob : inference_knobs())
    if (knob.scope == KnobScope::kWorker)
      if (auto v = config.get(knob.name)) out.push_back(knob.name + "=" + *v);
  return out;
}

std::map<std::string, std::string> worker_environment(const Configuration& config) {
  std::map<std::string, std::string> env;
  for (const auto& knob : inference_knobs())
    if (knob.scope == KnobScope::kWorker)
      if (auto v = config.get(knob.name))
        for (const auto& [name, value] : knob.environment(*v)) env[name] = value;
  return env;
}

std::map<std::string, std::string> confirm_worker_knobs(const ResolvedConfiguration& config) {
  std::map<std::string, std::string> seen;
  for (const auto& knob : inference_knobs()) {
    if (knob.scope != KnobScope::kWorker) continue;
    const auto& resolved = config.knob(knob.name);
    if (resolved.applicable) seen[knob.name] = knob.confirm(resolved.value);
  }
  return seen;
}

}  // namespace torchperf
