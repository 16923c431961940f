#include "torchperf/config/apply.h"

#include <vector>

namespace torchperf {

void prepare_workload(const ResolvedConfiguration& config, Workload& workload) {
  for (const auto& knob : inference_knobs()) {
    const auto& resolved = config.knob(knob.name);
    if (resolved.applicable) knob.prepare(resolved.value, workload);
  }
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

}  // namespace torchperf
