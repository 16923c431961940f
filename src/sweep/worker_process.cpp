#include "torchperf/sweep/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>

#include "torchperf/error.h"

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

WorkerOutcome run_worker_process(const std::string& executable, const nlohmann::json& request,
                                 const WorkerLimits& limits, const std::string& log_path,
                                 const std::function<bool(double)>& tick) {
  // A worker that dies while we write its request must not kill the supervisor with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0)
    throw RuntimeFailure("pipe: " + std::string(strerror(errno)));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    throw RuntimeFailure("pipe: " + std::string(strerror(errno)));
  }
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
    throw RuntimeFailure("cannot create the worker log '" + log_path + "'");
  }
  const pid_t parent = ::getpid();
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1], log_fd}) ::close(fd);
    throw RuntimeFailure("fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    // Only async-signal-safe calls until exec. The worker dies with the supervisor (SIGKILL of
    // the supervisor leaves no orphan measuring on a shared machine).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    // Ctrl-C is the supervisor's to handle: it stops the worker itself and keeps the journal
    // consistent (a point cut short by ^C is not recorded as a crash).
    ::signal(SIGINT, SIG_IGN);
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::dup2(from_child[1], kWorkerResponseFd);
    char* const argv[] = {const_cast<char*>(executable.c_str()), const_cast<char*>("__worker"),
                          nullptr};
    ::execv(executable.c_str(), argv);
    const char msg[] = "torchperf worker: exec failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  ::close(log_fd);
  int in_fd = to_child[1], out_fd = from_child[0];

  const std::string line = request.dump() + "\n";
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(in_fd, line.data() + written, line.size() - written);
    if (n <= 0) break;  // the worker died: its exit status tells
    written += static_cast<std::size_t>(n);
  }
  close_fd(in_fd);

  WorkerOutcome outcome;
  std::string response;
  int status = 0;
  bool exited = false, killed = false;
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
        ::kill(pid, SIGKILL);
        killed = true;
        outcome.exit = WorkerExit::kOutOfMemory;
        outcome.message = "exceeded the memory cap of " +
                          std::to_string(limits.memory_cap_bytes >> 20) + " MiB (resident " +
                          std::to_string(rss >> 20) + " MiB) and was killed";
      } else if (limits.timeout_s > 0 && t > limits.timeout_s) {
        ::kill(pid, SIGKILL);
        killed = true;
        outcome.exit = WorkerExit::kTimedOut;
        char buf[160];
        std::snprintf(buf, sizeof(buf),
                      "still running after the %.0f s point timeout and was killed",
                      limits.timeout_s);
        outcome.message = buf;
      } else if (tick && !tick(t)) {
        ::kill(pid, SIGKILL);
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
  std::string how;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    how = "died on signal SIG" + std::string(name ? name : std::to_string(sig).c_str());
    if (sig == SIGKILL) how += " (the kernel's OOM killer, or an outside kill)";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    how = "could not be started ('" + executable + "' __worker)";
  } else {
    how = "exited with status " + std::to_string(WEXITSTATUS(status)) + " without an answer";
  }
  const std::string last = last_line_of(log_path);
  outcome.message = "worker " + how + (last.empty() ? "" : "; its last words: " + last);
  return outcome;
}

}  // namespace torchperf
