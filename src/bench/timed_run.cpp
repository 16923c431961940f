#include "torchperf/bench/timed_run.h"

#include <memory>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/config/apply.h"
#include "torchperf/error.h"

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
      // A stream of varying shapes: one timed call is one pass over its timed batches (drawn
      // across its padded sizes), so that every block holds the same mix of lengths.
      if (w->stream)
        for (const std::size_t b : w->stream->timed) w->model->forward(w->stream->batches[b].inputs);
      else
        w->model->forward(w->inputs);
    } catch (const std::exception& e) {
      undo();
      // Name the configuration that failed: in a --vs comparison it may be either side.
      throw RuntimeFailure("configuration " + c->to_string() +
                           " failed while timing: " + compat::concise_error_message(e.what()));
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
