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

namespace torchperf {
namespace {

std::int64_t resident_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  long long size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return static_cast<std::int64_t>(resident) * sysconf(_SC_PAGE_SIZE);
}

std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 300) last = last.substr(0, 300) + "…";
  return last;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string to_string(WorkerExit exit) {
  switch (exit) {
    case WorkerExit::kAnswered:
      return "answered";
    case WorkerExit::kCrashed:
      return "crashed";
    case WorkerExit::kTimedOut:
      return "timed-out";
    case WorkerExit::kOutOfMemory:
      return "out-of-memory";
  }
  return "crashed";
}

namespace {

// Starts `executable ARGS` (`torchperf __worker`, or the Python worker) with stdin and fd 3 on
// pipes and stdout/stderr in the log.
Child spawn_worker(const std::string& executable, const std::string& log_path,
                   const WorkerEnvironment& environment,
                   const std::vector<std::string>& args = {"__worker"}) {
  ChildSpec spec;
  spec.executable = executable;
  spec.args = args;
  spec.environment = environment;
  spec.log_path = log_path;
  spec.pipe_stdin = true;
  spec.response_fd = kWorkerResponseFd;
  // Its own group, so that a kill reaches what it started too: torch.compile's compiler and its
  // compile workers would otherwise outlive a worker stopped at its time limit.
  spec.new_process_group = true;
  return launch_child(spec);
}

// The worker and everything it started.
void kill_worker(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
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

bool write_all(int fd, const std::string& data) {
  std::size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n <= 0) return false;  // the worker died: its exit status tells
    written += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

WorkerOutcome run_worker_process(const std::string& executable, const nlohmann::json& request,
                                 const WorkerLimits& limits, const std::string& log_path,
                                 const std::function<bool(double)>& tick,
                                 const WorkerEnvironment& environment) {
  const auto start = Clock::now();
  const Child child = spawn_worker(executable, log_path, environment);
  const pid_t pid = child.pid;
  int in_fd = child.in_fd, out_fd = child.response_fd;

  write_all(in_fd, request.dump() + "\n");
  close_fd(in_fd);
  WorkerOutcome outcome;
  std::string response;
  int status = 0;
  bool exited = false, killed = false;
  const auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  while (!exited || out_fd >= 0) {
    if (out_fd >= 0) {
      pollfd p{out_fd, POLLIN, 0};
      if (::poll(&p, 1, exited ? 0 : 50) > 0) {
        char buf[65536];
        const ssize_t n = ::read(out_fd, buf, sizeof(buf));
        if (n > 0)
          response.append(buf, static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR)
          close_fd(out_fd);
      } else if (exited) {
        close_fd(out_fd);  // exited and nothing more to read (a grandchild may hold the pipe)
      }
    } else if (!exited) {
      ::usleep(50000);
    }
    if (!exited) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        exited = true;
        continue;
      }
      const std::int64_t rss = resident_bytes(pid);
      outcome.peak_rss_bytes = std::max(outcome.peak_rss_bytes, rss);
      if (killed) continue;
      const double t = elapsed();
      if (limits.memory_cap_bytes > 0 && rss > limits.memory_cap_bytes) {
        kill_worker(pid);
        killed = true;
        outcome.exit = WorkerExit::kOutOfMemory;
        outcome.message = "exceeded the memory cap of " +
                          std::to_string(limits.memory_cap_bytes >> 20) + " MiB (resident " +
                          std::to_string(rss >> 20) + " MiB) and was killed";
      } else if (limits.timeout_s > 0 && t > limits.timeout_s) {
        kill_worker(pid);
        killed = true;
        outcome.exit = WorkerExit::kTimedOut;
        char buf[160];
        std::snprintf(buf, sizeof(buf),
                      "still running after the %.0f s point timeout and was killed",
                      limits.timeout_s);
        outcome.message = buf;
      } else if (tick && !tick(t)) {
        kill_worker(pid);
        killed = true;
        outcome.exit = WorkerExit::kCrashed;
        outcome.message = "interrupted";
      }
    }
  }
  outcome.wall_s = elapsed();
  if (killed) return outcome;

  const auto nl = response.find('\n');
  if (!response.empty()) {
    try {
      outcome.response = nlohmann::json::parse(response.substr(0, nl));
      outcome.exit = WorkerExit::kAnswered;
      return outcome;
    } catch (const nlohmann::json::exception&) {
      // fall through: a partial answer is a crash
    }
  }
  outcome.exit = WorkerExit::kCrashed;
  outcome.message = describe_end(status, executable, log_path);
  return outcome;
}

WorkerSession::WorkerSession(const std::string& executable, const WorkerEnvironment& environment,
                             const WorkerLimits& limits, const std::string& log_path,
                             std::function<bool(double)> tick,
                             const std::vector<std::string>& args)
    : executable_(executable), log_path_(log_path), limits_(limits), tick_(std::move(tick)) {
  const Child child = spawn_worker(executable, log_path, environment, args);
  pid_ = child.pid;
  in_fd_ = child.in_fd;
  out_fd_ = child.response_fd;
}

WorkerSession::~WorkerSession() {
  resume();
  close_fd(in_fd_);  // a worker waiting for its next request sees the end of its input and exits
  close_fd(out_fd_);
  if (pid_ <= 0) return;
  for (int i = 0; i < 40; ++i) {  // up to 2 s to exit by itself
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    ::usleep(50000);
  }
  kill_worker(pid_);
  ::waitpid(pid_, nullptr, 0);
}

void WorkerSession::pause() {
  if (pid_ > 0 && !paused_ && ::kill(pid_, SIGSTOP) == 0) paused_ = true;
}

void WorkerSession::resume() {
  if (paused_ && pid_ > 0) ::kill(pid_, SIGCONT);
  paused_ = false;
}

bool WorkerSession::running() {
  if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = -1;
  return pid_ > 0;
}

nlohmann::json WorkerSession::ask(const nlohmann::json& request, double timeout_s) {
  if (pid_ <= 0) throw WorkerFailure(WorkerExit::kCrashed, "the worker has already ended");
  const auto start = Clock::now();
  const auto fail = [&](WorkerExit exit, const std::string& message) -> WorkerFailure {
    if (pid_ > 0) {
      kill_worker(pid_);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    return WorkerFailure(exit, message);
  };
  if (!write_all(in_fd_, request.dump() + "\n")) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    throw WorkerFailure(WorkerExit::kCrashed, describe_end(status, executable_, log_path_));
  }
  while (true) {
    const auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      const std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      try {
        return nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        throw fail(WorkerExit::kCrashed, "worker answered something that is not JSON: " +
                                             line.substr(0, 200));
      }
    }
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      char buf[65536];
      const ssize_t n = ::read(out_fd_, buf, sizeof(buf));
      if (n > 0) {
        pending_.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      // The worker closed its answer pipe: it has ended or is ending.
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      throw WorkerFailure(WorkerExit::kCrashed, describe_end(status, executable_, log_path_));
    }
    const std::int64_t rss = resident_bytes(pid_);
    peak_rss_ = std::max(peak_rss_, rss);
    const double t =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (limits_.memory_cap_bytes > 0 && rss > limits_.memory_cap_bytes)
      throw fail(WorkerExit::kOutOfMemory,
                 "exceeded the memory cap of " + std::to_string(limits_.memory_cap_bytes >> 20) +
                     " MiB (resident " + std::to_string(rss >> 20) + " MiB) and was killed");
    if (timeout_s > 0 && t > timeout_s) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "still running after its %.0f s limit and was killed",
                    timeout_s);
      throw fail(WorkerExit::kTimedOut, buf);
    }
    if (tick_ && !tick_(t)) throw fail(WorkerExit::kCrashed, "interrupted");
  }
}

}  // namespace torchperf
