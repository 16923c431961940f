#include "torchperf/process/command_run.h"

#include <sys/wait.h>

#include <fstream>

namespace torchperf {
namespace {

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
  CommandResult result;
  result.log_path = spec.log_path;
  WatchedChild child(spec);
  const Watch w = child.watch(result.out, limits);
  result.ending = w.end;
  child.kill();  // the group's other members (a compiler it started) end with it
  result.peak_rss_bytes = child.peak_resident_bytes();
  result.wall_s = w.elapsed_s;
  const int status = child.status();
  if (w.end == Ending::kAnswered && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);  // ours (SIGKILL) when killed
  result.last_error = last_line_of(spec.log_path);
  return result;
}

}  // namespace torchperf
