#include "torchperf/worker/worker_process.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>

#include "torchperf/error.h"
#include "torchperf/measure/clock.h"
#include "torchperf/process/child_process.h"
#include "torchperf/process/watched_child.h"

namespace torchperf {
namespace {

std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 300) last = last.substr(0, 300) + "…";
  return last;
}

}  // namespace

namespace {

// `executable ARGS` (`torchperf __worker`, or the Python worker) with stdin and fd 3 on pipes and
// stdout/stderr in the log, in its own group: a kill reaches what it started too (torch.compile's
// compiler and compile workers would otherwise outlive a worker stopped at its time limit).
ChildSpec worker_spec(const std::string& executable, const std::string& log_path,
                      const WorkerEnvironment& environment,
                      const std::vector<std::string>& args = {"__worker"}) {
  ChildSpec spec;
  spec.executable = executable;
  spec.args = args;
  spec.environment = environment;
  spec.log_path = log_path;
  spec.pipe_stdin = true;
  spec.response_fd = kWorkerResponseFd;
  return spec;
}

WatchLimits watch_limits(double timeout_s, std::int64_t memory_cap_bytes,
                         const std::function<bool(double)>& tick) {
  WatchLimits w;
  w.time_limit_s = timeout_s;
  w.memory_cap_bytes = memory_cap_bytes;
  w.keep_going = tick;
  return w;
}

std::string over_memory_message(std::int64_t cap, std::int64_t rss) {
  return "exceeded the memory cap of " + std::to_string(cap >> 20) + " MiB (resident " +
         std::to_string(rss >> 20) + " MiB) and was killed";
}

// "still running after the 600 s point timeout and was killed" (a one-shot worker) or "after
// its 60 s limit" (a request of a session).
std::string timed_out_message(bool one_shot, double timeout_s) {
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                one_shot ? "still running after the %.0f s point timeout and was killed"
                         : "still running after its %.0f s limit and was killed",
                timeout_s);
  return buf;
}

// Why a worker ended without an answer, from its exit status and the last line of its log.
std::string describe_end(int status, const std::string& executable, const std::string& log_path) {
  std::string how;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    how = "died on signal SIG" + std::string(name ? name : std::to_string(sig).c_str());
    if (sig == SIGKILL) how += " (the kernel's OOM killer, or an outside kill)";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    how = "could not be started ('" + executable + "')";
  } else {
    how = "exited with status " + std::to_string(WEXITSTATUS(status)) + " without an answer";
  }
  const std::string last = last_line_of(log_path);
  return "worker " + how + (last.empty() ? "" : "; its last words: " + last);
}

}  // namespace

WorkerOutcome run_worker_process(const std::string& executable, const nlohmann::json& request,
                                 const WatchLimits& limits, const std::string& log_path,
                                 const std::function<bool(double)>& tick,
                                 const WorkerEnvironment& environment) {
  WatchedChild child(worker_spec(executable, log_path, environment));
  child.write(request.dump() + "\n");  // a worker that died before reading: its status tells
  child.close_input();
  std::string response;
  const Watch w = child.watch(response, watch_limits(limits.time_limit_s, limits.memory_cap_bytes, tick));
  WorkerOutcome outcome;
  outcome.wall_s = w.elapsed_s;
  outcome.peak_rss_bytes = child.peak_resident_bytes();
  switch (w.end) {
    case Ending::kOutOfMemory:
      outcome.ending = Ending::kOutOfMemory;
      outcome.message = over_memory_message(limits.memory_cap_bytes, w.resident_bytes);
      return outcome;
    case Ending::kTimedOut:
      outcome.ending = Ending::kTimedOut;
      outcome.message = timed_out_message(true, limits.time_limit_s);
      return outcome;
    case Ending::kStopped:
      outcome.ending = Ending::kStopped;
      outcome.message = "stopped";
      return outcome;
    case Ending::kAnswered:
    case Ending::kCrashed:
      break;
  }
  if (!response.empty()) {
    try {
      outcome.response = nlohmann::json::parse(response.substr(0, response.find('\n')));
      outcome.ending = Ending::kAnswered;
      return outcome;
    } catch (const nlohmann::json::exception&) {
      // fall through: a partial answer is a crash
    }
  }
  outcome.ending = Ending::kCrashed;
  outcome.message = describe_end(child.status(), executable, log_path);
  return outcome;
}

WorkerSession::WorkerSession(const std::string& executable, const WorkerEnvironment& environment,
                             const WatchLimits& limits, const std::string& log_path,
                             std::function<bool(double)> tick,
                             const std::vector<std::string>& args)
    : executable_(executable),
      log_path_(log_path),
      limits_(limits),
      tick_(std::move(tick)),
      child_(std::make_unique<WatchedChild>(worker_spec(executable, log_path, environment, args))) {}

WorkerSession::~WorkerSession() { child_->end(2.0); }

void WorkerSession::pause() { child_->pause(); }
void WorkerSession::resume() { child_->resume(); }
bool WorkerSession::running() { return child_->running(); }
std::int64_t WorkerSession::peak_rss_bytes() const { return child_->peak_resident_bytes(); }
pid_t WorkerSession::pid() const { return child_->running_pid(); }

nlohmann::json WorkerSession::ask(const nlohmann::json& request, double timeout_s) {
  if (!child_->running()) throw WorkerFailure(Ending::kCrashed, "the worker has already ended");
  const auto ended = [&] {
    child_->kill();  // reaps it when it has not ended by itself
    return WorkerFailure(Ending::kCrashed, describe_end(child_->status(), executable_, log_path_));
  };
  if (!child_->write(request.dump() + "\n")) throw ended();
  const Watch w = child_->watch(pending_, watch_limits(timeout_s, limits_.memory_cap_bytes, tick_),
                                [](const std::string& b) { return b.find('\n') != std::string::npos; });
  switch (w.end) {
    case Ending::kOutOfMemory:
      throw WorkerFailure(Ending::kOutOfMemory,
                          over_memory_message(limits_.memory_cap_bytes, w.resident_bytes));
    case Ending::kTimedOut:
      throw WorkerFailure(Ending::kTimedOut, timed_out_message(false, timeout_s));
    case Ending::kStopped:
      throw WorkerFailure(Ending::kStopped, "stopped");
    case Ending::kCrashed:
      throw ended();
    case Ending::kAnswered:
      break;
  }
  const auto nl = pending_.find('\n');
  const std::string line = pending_.substr(0, nl);
  pending_.erase(0, nl + 1);
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    child_->kill();
    throw WorkerFailure(Ending::kCrashed,
                        "worker answered something that is not JSON: " + line.substr(0, 200));
  }
}

}  // namespace torchperf
