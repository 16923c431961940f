// Runs one job in a child process (the torchperf binary in its hidden `__worker` mode): the request
// goes down a pipe, the response comes back on another (fd 3), and the child is watched for a
// time limit and a memory cap and killed if it crosses either. A crash costs that job only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace torchperf {

struct WorkerLimits {
  double timeout_s = 600;
  std::int64_t memory_cap_bytes = 0;  // resident set size; 0: none
};

enum class WorkerExit {
  kAnswered,     // the worker sent a response (which may itself report an error)
  kCrashed,      // died on a signal or exited without a response
  kTimedOut,     // killed at the time limit
  kOutOfMemory,  // killed at the memory cap
};
std::string to_string(WorkerExit exit);

struct WorkerOutcome {
  WorkerExit exit = WorkerExit::kAnswered;
  nlohmann::json response;  // when answered
  std::string message;      // what happened, for the user, when not answered
  double wall_s = 0;
  std::int64_t peak_rss_bytes = 0;  // as sampled by the supervisor
};

// tick(elapsed_s) is called about every 50 ms while the worker runs; returning false kills it
// (interruption) and the outcome is kCrashed with the message "interrupted".
WorkerOutcome run_worker_process(const std::string& executable, const nlohmann::json& request,
                                 const WorkerLimits& limits, const std::string& log_path,
                                 const std::function<bool(double)>& tick = nullptr);

// The file descriptor a worker writes its response to.
inline constexpr int kWorkerResponseFd = 3;

}  // namespace torchperf
