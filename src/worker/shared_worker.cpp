#include "torchperf/worker/shared_worker.h"

#include "torchperf/config/apply.h"
#include "torchperf/measure/clock.h"
#include "torchperf/worker/protocol.h"

namespace torchperf {

WorkerOutcome SharedWorker::measure(const nlohmann::json& request, const Configuration& config,
                                    double timeout_s) {
  const auto start = time_.now();
  const auto since_start = [&] { return to_seconds(time_.now() - start); };
  WorkerOutcome out;
  const auto fail = [&](const WorkerFailure& e) {
    close();
    out.ending = e.ending;
    out.message = e.what();
    out.wall_s = since_start();
    return out;
  };
  // Reused only while the process state is the same and the idle worker is still there.
  if (session_ && (!process_state_differences(*state_, config).empty() || !session_->running()))
    close();
  reused_ = session_ != nullptr;
  if (!session_) {
    ++started_;
    session_ = std::make_unique<WorkerSession>(
        executable_, worker_environment(config), limits_,
        log_dir_ + "/brief-worker-" + std::to_string(started_) + ".log", tick_);
    state_ = config;
    try {
      const nlohmann::json ready = session_->ask(to_request(MeasuresRequest{}), limits_.time_limit_s);
      if (!ready.value("ok", false)) {
        close();
        out.ending = Ending::kCrashed;
        out.message = "the shared worker refused to start: " + ready.dump();
        out.wall_s = since_start();
        return out;
      }
    } catch (const WorkerFailure& e) {
      return fail(e);
    }
  }
  try {
    out.response = session_->ask(request, timeout_s);
  } catch (const WorkerFailure& e) {
    return fail(e);
  }
  out.ending = Ending::kAnswered;
  out.wall_s = since_start();
  if (!out.response.value("ok", false)) close();  // the worker ends after an answered error
  return out;
}

}  // namespace torchperf
