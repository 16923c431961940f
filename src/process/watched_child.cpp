#include "torchperf/process/watched_child.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace torchperf {

namespace {
constexpr std::pair<Ending, const char*> kEndings[] = {
    {Ending::kAnswered, "answered"},       {Ending::kCrashed, "crashed"},
    {Ending::kOutOfMemory, "out-of-memory"}, {Ending::kTimedOut, "timed-out"},
    {Ending::kStopped, "stopped"}};
}  // namespace

std::string to_string(Ending ending) {
  for (const auto& [e, name] : kEndings)
    if (e == ending) return name;
  return "crashed";
}

Ending ending_named(const std::string& name) {
  for (const auto& [e, n] : kEndings)
    if (name == n) return e;
  throw std::invalid_argument("not how a child ends: '" + name + "'");
}

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::int64_t resident_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  long long size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGE_SIZE);
}

WatchedChild::WatchedChild(ChildSpec spec) {
  spec.new_process_group = true;
  const Child child = launch_child(spec);
  pid_ = child.pid;
  input_fd_ = child.in_fd;
  output_fd_ = child.response_fd >= 0 ? child.response_fd : child.out_fd;
  if (child.response_fd >= 0 && child.out_fd >= 0) ::close(child.out_fd);
}

WatchedChild::~WatchedChild() {
  resume();
  close_fd(input_fd_);
  close_fd(output_fd_);
  if (!reaped_) kill();
}

bool WatchedChild::write(const std::string& data) {
  std::size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(input_fd_, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // the child has ended: its exit status tells why
    written += static_cast<std::size_t>(n);
  }
  return true;
}

void WatchedChild::close_input() { close_fd(input_fd_); }

bool WatchedChild::reap(bool wait) {
  if (reaped_) return true;
  if (pid_ <= 0) return reaped_ = true;
  pid_t done;
  do {
    done = ::waitpid(pid_, &status_, wait ? 0 : WNOHANG);
  } while (done < 0 && errno == EINTR);  // Ctrl-C's handler does not restart the call
  if (done == pid_ || (done < 0 && errno == ECHILD)) reaped_ = true;
  return reaped_;
}

void WatchedChild::kill() {
  if (pid_ <= 0) return;
  resume();
  ::kill(-pid_, SIGKILL);  // the group: a compiler or compile workers it started
  if (!reaped_) ::kill(pid_, SIGKILL);
  reap(true);
}

void WatchedChild::end(double grace_s) {
  resume();
  close_fd(input_fd_);  // a worker waiting for its next request sees the end and exits
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (!reap(false) && std::chrono::steady_clock::now() < deadline) ::usleep(50000);
  kill();
}

void WatchedChild::pause() {
  if (!reaped_ && !paused_ && ::kill(pid_, SIGSTOP) == 0) paused_ = true;
}

void WatchedChild::resume() {
  if (paused_ && !reaped_) ::kill(pid_, SIGCONT);
  paused_ = false;
}

bool WatchedChild::running() { return !reap(false); }

void WatchedChild::drain(std::string& buffer) {
  // What it wrote before it ended; a grandchild may hold the pipe open, so never block.
  while (output_fd_ >= 0) {
    pollfd p{output_fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) break;
    char chunk[65536];
    const ssize_t n = ::read(output_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close_fd(output_fd_);
      break;
    }
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

Watch WatchedChild::watch(std::string& buffer, const WatchLimits& limits,
                          const std::function<bool(const std::string&)>& answered) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int poll_ms = std::max(1, static_cast<int>(limits.poll_interval_s * 1000));
  Watch w;
  for (;;) {
    if (answered && answered(buffer)) {
      w.end = Ending::kAnswered;
      break;
    }
    if (output_fd_ >= 0 && !reaped_) {
      pollfd p{output_fd_, POLLIN, 0};
      if (::poll(&p, 1, poll_ms) > 0) {
        char chunk[65536];
        const ssize_t n = ::read(output_fd_, chunk, sizeof chunk);
        // No `continue` after a read: a child that never stops writing is still held to its
        // bounds below.
        if (n > 0)
          buffer.append(chunk, static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR)
          close_fd(output_fd_);  // it closed its end: ending
      }
    } else if (!reaped_) {
      ::usleep(static_cast<useconds_t>(poll_ms) * 1000);
    }
    if (reap(false)) {
      drain(buffer);
      w.end = !answered || answered(buffer) ? Ending::kAnswered : Ending::kCrashed;
      break;
    }
    w.resident_bytes = resident_bytes(pid_);
    peak_rss_ = std::max(peak_rss_, w.resident_bytes);
    if (limits.memory_cap_bytes > 0 && w.resident_bytes > limits.memory_cap_bytes)
      w.end = Ending::kOutOfMemory;
    else if (limits.time_limit_s > 0 && elapsed() > limits.time_limit_s)
      w.end = Ending::kTimedOut;
    else if (limits.keep_going && !limits.keep_going(elapsed()))
      w.end = Ending::kStopped;
    else
      continue;
    kill();
    break;
  }
  w.elapsed_s = elapsed();
  return w;
}

}  // namespace torchperf
