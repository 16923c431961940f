#include "torchperf/process/command_run.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>

namespace torchperf {
namespace {

std::int64_t resident_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}

std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

}  // namespace

CommandResult run_command(const ChildSpec& given, const CommandLimits& limits) {
  ChildSpec spec = given;
  spec.pipe_stdout = true;
  spec.new_process_group = true;
  CommandResult result;
  result.log_path = spec.log_path;
  const auto start = std::chrono::steady_clock::now();
  const Child child = launch_child(spec);
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto kill_group = [&] {
    ::kill(-child.pid, SIGKILL);
    ::kill(child.pid, SIGKILL);
  };
  const int poll_ms = std::max(1, static_cast<int>(limits.poll_interval_s * 1000));
  bool open = true;
  int status = 0;
  for (;;) {
    if (open) {
      pollfd fd{child.out_fd, POLLIN, 0};
      if (::poll(&fd, 1, poll_ms) > 0) {
        char buffer[4096];
        const ssize_t n = ::read(child.out_fd, buffer, sizeof buffer);
        if (n > 0) result.out.append(buffer, static_cast<std::size_t>(n));
        if (n == 0) open = false;
      }
    } else {
      ::usleep(static_cast<useconds_t>(poll_ms) * 1000);
    }
    const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
    if (done == child.pid) break;
    result.peak_rss_bytes = std::max(result.peak_rss_bytes, resident_bytes(child.pid));
    if (limits.memory_cap_bytes > 0 && result.peak_rss_bytes > limits.memory_cap_bytes)
      result.over_memory = true;
    else if (limits.time_limit_s > 0 && elapsed() > limits.time_limit_s)
      result.timed_out = true;
    else if (limits.stop_requested && limits.stop_requested())
      result.stopped = true;
    else
      continue;
    kill_group();
    ::waitpid(child.pid, &status, 0);
    break;
  }
  // What it wrote before it ended (the pipe may still hold its answer).
  for (char buffer[4096];;) {
    const ssize_t n = ::read(child.out_fd, buffer, sizeof buffer);
    if (n <= 0) break;
    result.out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(child.out_fd);
  // The group's other members (a compiler it started) end with it.
  ::kill(-child.pid, SIGKILL);
  result.wall_s = elapsed();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.last_error = last_line_of(spec.log_path);
  return result;
}

}  // namespace torchperf
