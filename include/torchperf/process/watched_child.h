// One child process watched while it runs: its output read as it comes, its resident memory
// sampled, and the child killed with everything it started (its process group) when it runs over
// its time, over its memory cap, or when the caller says to stop. The one place torchperf polls,
// samples and kills a child: a command run to its end, a worker's one answer, a session's asks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "torchperf/process/child_process.h"

namespace torchperf {

// The bounds a watch enforces. The clock starts when the watch does.
struct WatchLimits {
  double time_limit_s = 0;            // 0: none
  std::int64_t memory_cap_bytes = 0;  // the child's resident memory; 0: none
  double poll_interval_s = 0.05;      // how often the bounds are checked
  // Asked at each poll with the seconds since the watch began: false stops the child (Ctrl-C).
  std::function<bool(double elapsed_s)> keep_going;
};

// Limits with a time limit and, optionally, a memory cap (the rest at their defaults).
inline WatchLimits within(double time_limit_s, std::int64_t memory_cap_bytes = 0) {
  WatchLimits limits;
  limits.time_limit_s = time_limit_s;
  limits.memory_cap_bytes = memory_cap_bytes;
  return limits;
}

// A process's resident memory, from /proc/PID/statm; 0 once it has gone.
std::int64_t resident_bytes(pid_t pid);

// How a child ended: the one vocabulary of a watch, a command, a worker's job and a tune's point.
enum class Ending {
  kAnswered,     // what the caller waited for arrived: a worker's answer, or a command's own end
  kCrashed,      // it ended by itself before that: a signal, or an exit without an answer
  kOutOfMemory,  // killed over its memory cap
  kTimedOut,     // killed at its time limit
  kStopped,      // killed because keep_going (or a tick) said so: Ctrl-C
};
// "answered", "crashed", "out-of-memory", "timed-out", "stopped" (the journal's failure kinds).
std::string to_string(Ending ending);
// std::invalid_argument for another name.
Ending ending_named(const std::string& name);

struct Watch {
  Ending end = Ending::kCrashed;
  double elapsed_s = 0;
  std::int64_t resident_bytes = 0;  // the last sample (over the cap: the one that was)
};

class WatchedChild {
 public:
  // Launches the child in a process group of its own (so that a kill reaches what it starts).
  explicit WatchedChild(ChildSpec spec);
  // Kills what is still running and reaps it.
  ~WatchedChild();
  WatchedChild(const WatchedChild&) = delete;
  WatchedChild& operator=(const WatchedChild&) = delete;

  pid_t pid() const { return pid_; }
  pid_t running_pid() const { return reaped_ ? -1 : pid_; }  // -1 once reaped
  int output_fd() const { return output_fd_; }  // the response pipe, else stdout's

  // Writes all of data to its stdin; false when it has ended (its exit status then tells).
  bool write(const std::string& data);
  void close_input();

  // Reads the output into buffer until `answered(buffer)` is true (kAnswered), the child has
  // ended and its output is read without it (kCrashed), or a bound is hit: then the group is
  // killed and reaped. answered empty: until the child ends (kAnswered).
  Watch watch(std::string& buffer, const WatchLimits& limits,
              const std::function<bool(const std::string&)>& answered = nullptr);

  // Kills the group (SIGKILL) and reaps the child.
  void kill();
  // Ends the child gently: input closed, up to grace_s to exit by itself, then kill().
  void end(double grace_s);
  // SIGSTOP / SIGCONT to the child (an idle worker must not run while its peer is timed).
  void pause();
  void resume();

  bool running();      // false once reaped (here or by a watch)
  int status() const { return status_; }  // waitpid's, once reaped
  std::int64_t peak_resident_bytes() const { return peak_rss_; }

 private:
  bool reap(bool wait);
  void drain(std::string& buffer);

  pid_t pid_ = -1;
  int input_fd_ = -1, output_fd_ = -1;
  int status_ = 0;
  bool reaped_ = false, paused_ = false;
  std::int64_t peak_rss_ = 0;
};

}  // namespace torchperf
