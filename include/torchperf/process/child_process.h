// The one launcher of child processes: tune's and bench's workers, serve's restart with the
// worker knobs' environment, serve-tune's server instances. A child gets our environment with
// the overrides applied, dies with its parent (no orphan measuring on a shared machine), and
// leaves Ctrl-C to the parent, which stops it and keeps what finished.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace torchperf {

// Variables set (or, with an empty value, unset) in a child's environment.
using ChildEnvironment = std::map<std::string, std::string>;

struct ChildSpec {
  std::string executable;
  std::vector<std::string> args;  // after argv[0], which is the executable
  ChildEnvironment environment;
  std::string log_path;        // stderr (and stdout unless piped) go here
  bool truncate_log = true;    // false: append
  bool pipe_stdin = false;     // Child::in_fd writes to its stdin
  bool pipe_stdout = false;    // Child::out_fd reads its stdout
  int response_fd = -1;        // >= 0: Child::response_fd reads what it writes to this fd
  // Its own process group, so that what it starts (a compiler) can be stopped with it.
  bool new_process_group = false;
};

struct Child {
  pid_t pid = -1;
  int in_fd = -1, out_fd = -1, response_fd = -1;  // ours, close-on-exec; -1 where not asked
};

// Starts the child; throws RuntimeFailure (naming what failed) when it cannot. An exec that
// fails in the child exits it with 127.
Child launch_child(const ChildSpec& spec);

// Replaces this process with executable + args under the environment with these overrides
// (serve restarting itself so that worker knobs take at process start). Returns only by
// throwing RuntimeFailure.
[[noreturn]] void replace_process(const std::string& executable,
                                  const std::vector<std::string>& args,
                                  const ChildEnvironment& environment);

// Our environment with the overrides applied (empty value: unset), as NAME=VALUE strings.
std::vector<std::string> child_environment(const ChildEnvironment& overrides);

}  // namespace torchperf
