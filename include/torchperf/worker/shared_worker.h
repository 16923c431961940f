// Brief points measured in a worker they share. A smart search screens dozens of points briefly,
// and a fresh process for each (LibTorch loaded and initialised, the reference read) costs about
// as much as the brief measurement itself. Used by tune's supervisor for the smart search's brief
// points.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "torchperf/config/configuration.h"
#include "torchperf/measure/clock.h"
#include "torchperf/worker/worker_process.h"

namespace torchperf {

// Points share the worker only while their process state is the same (threads, the allocator,
// the BLAS, OpenMP: no process_state_differences), so "two sides that differ in process state run
// in two processes" holds; each point still loads the model and warms up on its own. One worker
// lives at a time, so an idle one never spins on the cores the next one measures on. A failure of
// any kind (an answered error, a crash, a limit) ends the worker: the next point starts afresh.
class SharedWorker {
 public:
  // time: what a point's wall (the budget's evidence) is read on.
  SharedWorker(std::string executable, std::string log_dir, WatchLimits limits,
               std::function<bool(double)> tick, TimeSource& time = steady_time())
      : executable_(std::move(executable)),
        log_dir_(std::move(log_dir)),
        limits_(limits),
        tick_(std::move(tick)),
        time_(time) {}

  // A measure request for config, in the live worker when its process state matches, else in a
  // new one. Never throws for the worker's end: that is the outcome's exit.
  WorkerOutcome measure(const nlohmann::json& request, const Configuration& config,
                        double timeout_s);
  void close() {
    session_.reset();
    state_.reset();
  }
  std::size_t started() const { return started_; }  // workers started so far
  // Whether the last measure() ran in a worker an earlier point had started: its wall time has
  // no process start-up in it.
  bool reused() const { return reused_; }

 private:
  std::string executable_, log_dir_;
  WatchLimits limits_;
  std::function<bool(double)> tick_;
  TimeSource& time_;
  std::optional<Configuration> state_;  // the configuration the live worker started with
  std::unique_ptr<WorkerSession> session_;
  std::size_t started_ = 0;
  bool reused_ = false;
};

}  // namespace torchperf
