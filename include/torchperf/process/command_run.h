// A child program run to its end under a time limit and a memory cap, its answer read back: the
// Python side's export, compile and reference steps. Torch-free: it knows processes, not models.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "torchperf/process/child_process.h"
#include "torchperf/process/watched_child.h"

namespace torchperf {

// A command's bounds are a watch's (keep_going false: stopped, as at Ctrl-C).
using CommandLimits = WatchLimits;


struct CommandResult {
  // kAnswered: it ran to its own end (exit_code or signal says how); else the bound that
  // stopped it (kTimedOut, kOutOfMemory, kStopped when keep_going said to stop).
  Ending ending = Ending::kAnswered;
  int exit_code = -1;   // -1 when it did not exit by itself
  int signal = 0;       // the signal that ended it, 0 when it exited
  std::int64_t peak_rss_bytes = 0;  // as sampled, the child process alone (not its children)
  double wall_s = 0;
  std::string out;         // what it wrote on stdout
  std::string last_error;  // the last non-empty line of its stderr
  std::string log_path;    // its whole stderr

  bool succeeded() const { return ending == Ending::kAnswered && exit_code == 0; }
};

// Runs executable with args (and the environment overrides) to its end; stderr goes to log_path.
// Over the time limit or the memory cap, the child and the processes it started are killed
// (SIGKILL to its process group) and the result says which. Throws RuntimeFailure only when
// the child cannot be started.
CommandResult run_command(const ChildSpec& spec, const CommandLimits& limits);

}  // namespace torchperf
