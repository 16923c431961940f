// Runs one job in a child process (the torchperf binary in its hidden `__worker` mode): the request
// goes down a pipe, the response comes back on another (fd 3), and the child is watched for a
// time limit and a memory cap and killed if it crosses either. A crash costs that job only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "torchperf/process/child_process.h"
#include "torchperf/process/watched_child.h"

namespace torchperf {

// A worker's bounds are a watch's (process/watched_child.h): time_limit_s per job (or per request
// of a session), the memory cap on its resident set. Its progress and Ctrl-C come as a tick.
inline constexpr double kWorkerTimeLimitS = 600;

// How a worker's job ended, in the watch's words: kAnswered (a response, which may itself report
// an error), kCrashed (a signal, or an exit without a response), kTimedOut, kOutOfMemory, or
// kStopped (its tick said to stop: Ctrl-C).
struct WorkerOutcome {
  Ending ending = Ending::kAnswered;
  nlohmann::json response;  // when answered
  std::string message;      // what happened, for the user, when not answered
  double wall_s = 0;
  std::int64_t peak_rss_bytes = 0;  // as sampled by the supervisor
  // Its wire form (a node job prints it; protocol.h's visitors walk it).
  template <typename V>
  void fields(V& v) {
    v("ending", ending);
    v("response", response);
    v("message", message);
    v("wall_s", wall_s);
    v("peak_rss_bytes", peak_rss_bytes);
  }
};

// Variables set (or, with an empty value, unset) in a worker's environment: the worker knobs'.
using WorkerEnvironment = ChildEnvironment;

// tick(elapsed_s) is called about every 50 ms while the worker runs; returning false kills it
// and the outcome is kStopped.
WorkerOutcome run_worker_process(const std::string& executable, const nlohmann::json& request,
                                 const WatchLimits& limits, const std::string& log_path,
                                 const std::function<bool(double)>& tick = nullptr,
                                 const WorkerEnvironment& environment = {});

// A worker that answers several requests in turn (one side of a two-process comparison). Each
// ask() is watched like a one-shot worker: the time limit (per request), the memory cap and
// tick(); a worker that dies, is killed or answers garbage throws WorkerFailure, and the session
// is over.
struct WorkerFailure : std::runtime_error {
  WorkerFailure(Ending ending, const std::string& message)
      : std::runtime_error(message), ending(ending) {}
  Ending ending;
};

class WorkerSession {
 public:
  // args: what the executable is started with (the Python worker: -m torchperf.worker).
  WorkerSession(const std::string& executable, const WorkerEnvironment& environment,
                const WatchLimits& limits, const std::string& log_path,
                std::function<bool(double)> tick = nullptr,
                const std::vector<std::string>& args = {"__worker"});
  ~WorkerSession();  // ends the worker (closes its input, then kills it if it lingers)
  WorkerSession(const WorkerSession&) = delete;
  WorkerSession& operator=(const WorkerSession&) = delete;

  nlohmann::json ask(const nlohmann::json& request, double timeout_s);
  // False once the worker has ended (reaped here): an idle worker may have been killed.
  bool running();
  // Stops and continues the whole worker (SIGSTOP, SIGCONT): while its peer is timed, an idle
  // worker must not run at all (OpenMP threads told to wait actively spin on every core).
  void pause();
  void resume();
  std::int64_t peak_rss_bytes() const;
  pid_t pid() const;  // -1 once it has ended

 private:
  std::string executable_, log_path_;
  WatchLimits limits_;
  std::function<bool(double)> tick_;
  std::unique_ptr<WatchedChild> child_;
  std::string pending_;  // bytes read past the last answer
};

// The file descriptor a worker writes its response to.
inline constexpr int kWorkerResponseFd = 3;

}  // namespace torchperf
