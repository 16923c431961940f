#include "torchperf/process/child_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "torchperf/error.h"

extern char** environ;

namespace torchperf {
namespace {

std::string errno_text() { return std::strerror(errno); }

struct Argv {
  std::vector<std::string> strings;
  std::vector<char*> pointers;
  explicit Argv(std::vector<std::string> s) : strings(std::move(s)) {
    for (auto& x : strings) pointers.push_back(x.data());
    pointers.push_back(nullptr);
  }
};

void close_all(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

}  // namespace

std::vector<std::string> child_environment(const ChildEnvironment& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (!overrides.count(name)) env.push_back(entry);
  }
  for (const auto& [name, value] : overrides)
    if (!value.empty()) env.push_back(name + "=" + value);
  return env;
}

Child launch_child(const ChildSpec& spec) {
  // A child that dies while we write to it must not kill us with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  // Built before fork: after it, only async-signal-safe calls are allowed.
  std::vector<std::string> args = {spec.executable};
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  Argv argv(std::move(args));
  Argv envp(child_environment(spec.environment));
  int in[2] = {-1, -1}, out[2] = {-1, -1}, response[2] = {-1, -1};
  const auto fail = [&](const std::string& what) {
    close_all({in[0], in[1], out[0], out[1], response[0], response[1]});
    throw RuntimeFailure("cannot start '" + spec.executable + "': " + what);
  };
  if (spec.pipe_stdin && ::pipe2(in, O_CLOEXEC) != 0) fail("pipe: " + errno_text());
  if (spec.pipe_stdout && ::pipe2(out, O_CLOEXEC) != 0) fail("pipe: " + errno_text());
  if (spec.response_fd >= 0 && ::pipe2(response, O_CLOEXEC) != 0) fail("pipe: " + errno_text());
  const int log_fd =
      ::open(spec.log_path.c_str(),
             O_WRONLY | O_CREAT | O_CLOEXEC | (spec.truncate_log ? O_TRUNC : O_APPEND), 0644);
  if (log_fd < 0) fail("cannot create the log '" + spec.log_path + "': " + errno_text());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    fail("fork: " + errno_text());
  }
  if (pid == 0) {
    // Only async-signal-safe calls until exec. The child dies with its parent: a SIGKILL of the
    // parent leaves no orphan.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    // Ctrl-C is the parent's to handle: it stops the child itself and keeps what finished (a
    // point cut short by ^C is not recorded as a crash).
    ::signal(SIGINT, SIG_IGN);
    if (spec.new_process_group) ::setpgid(0, 0);
    if (spec.pipe_stdin) ::dup2(in[0], STDIN_FILENO);
    ::dup2(spec.pipe_stdout ? out[1] : log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    if (spec.response_fd >= 0) ::dup2(response[1], spec.response_fd);
    ::execve(spec.executable.c_str(), argv.pointers.data(), envp.pointers.data());
    const char msg[] = "torchperf: exec of a child process failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  close_all({in[0], out[1], response[1], log_fd});
  return {pid, in[1], out[0], response[0]};
}

void replace_process(const std::string& executable, const std::vector<std::string>& args,
                     const ChildEnvironment& environment) {
  std::vector<std::string> all = {executable};
  all.insert(all.end(), args.begin(), args.end());
  Argv argv(std::move(all));
  Argv envp(child_environment(environment));
  ::execve(executable.c_str(), argv.pointers.data(), envp.pointers.data());
  throw RuntimeFailure("cannot restart as '" + executable + "': " + errno_text());
}

}  // namespace torchperf
