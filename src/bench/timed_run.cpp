#include "torchperf/bench/timed_run.h"

#include <memory>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/config/apply.h"

namespace torchperf {

TimedRun make_timed_run(Workload& workload, const ResolvedConfiguration& config) {
  TimedRun run;
  Workload* w = &workload;
  const ResolvedConfiguration* c = &config;
  auto process_undo = std::make_shared<Undo>([] {});
  run.enter = [w, c, process_undo] { *process_undo = enter_scope(*c, *w, KnobScope::kProcess); };
  run.exit = [process_undo] {
    (*process_undo)();
    *process_undo = [] {};
  };
  run.iterate = [w, c] {
    Undo undo = enter_scope(*c, *w, KnobScope::kCall);
    try {
      w->model->forward(w->inputs);
    } catch (...) {
      undo();
      throw;
    }
    undo();
  };
  const c10::Device device = workload.device;
  run.synchronize = [device] {
    if (device.is_cuda()) compat::synchronize(compat::DeviceKind::kCuda, device.index());
  };
  return run;
}

}  // namespace torchperf
