#include "torchperf/models/python_side.h"

#include <atomic>

#include <fmt/format.h>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "torchperf/error.h"
#include "torchperf/process/scratch_dir.h"

#ifndef TORCHPERF_DEFAULT_PYTHON
#define TORCHPERF_DEFAULT_PYTHON "python3"
#endif
#ifndef TORCHPERF_PYTHON_DIR
#define TORCHPERF_PYTHON_DIR "python"
#endif

namespace torchperf {
namespace {

std::string from_environment(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::string log_path_for(const std::string& module) {
  static std::atomic<int> count{0};
  return scratch_path(module + "-" + std::to_string(count++) + ".log");
}

// The log is named to the user: it outlives the run.
const std::string& cited(const std::string& log_path) {
  keep_scratch_dir();
  return log_path;
}

}  // namespace

std::string python_interpreter() { return from_environment("TORCHPERF_PYTHON", TORCHPERF_DEFAULT_PYTHON); }

std::string python_package_dir() {
  return from_environment("TORCHPERF_PYTHON_PATH", TORCHPERF_PYTHON_DIR);
}

ChildEnvironment with_python_path(ChildEnvironment environment) {
  const char* path = std::getenv("PYTHONPATH");
  environment["PYTHONPATH"] =
      python_package_dir() + (path && *path ? std::string(":") + path : std::string());
  return environment;
}

const std::vector<InstalledEngine>& installed_engines() {
  static const std::vector<InstalledEngine> engines = [] {
    std::vector<InstalledEngine> out;
    if (from_environment("TORCHPERF_ENGINES", "") == std::string("none")) return out;
    PythonStep probe;
    probe.module = "torchperf.engines";
    probe.args = {"--installed"};
    probe.limits.time_limit_s = 60;
    probe.what = "asking the Python worker's Python which engines it has";
    try {
      const nlohmann::json answer = run_python_step(probe);
      for (const auto& [name, engine] : answer.at("engines").items())
        out.push_back({name, engine.at("version").get<std::string>(),
                       engine.at("cuda").get<bool>()});
    } catch (const std::exception&) {
      // No venv, or a Python too old to say: the engines' runtimes say they are not installed.
    }
    return out;
  }();
  return engines;
}

nlohmann::json run_python_step(const PythonStep& step) {
  ChildSpec spec;
  spec.executable = python_interpreter();
  if (!std::filesystem::exists(spec.executable))
    throw RuntimeFailure(step.what + ": no Python interpreter at '" + spec.executable +
                         "' (run `make venv`, or set TORCHPERF_PYTHON to the venv's python)");
  spec.args = {"-m", step.module};
  spec.args.insert(spec.args.end(), step.args.begin(), step.args.end());
  spec.environment = with_python_path(step.environment);
  spec.log_path = step.log_path.empty() ? log_path_for(step.module) : step.log_path;
  const CommandResult r = run_command(spec, step.limits);
  const std::string said = r.last_error.empty() ? "" : ": " + r.last_error;
  if (r.ending == Ending::kStopped) throw Interrupted(step.what + ": stopped");
  if (r.ending == Ending::kTimedOut)
    throw CompileError(fmt::format("{}: exceeded its time limit of {:.0f} s and was stopped",
                                   step.what, step.limits.time_limit_s));
  if (r.ending == Ending::kOutOfMemory)
    throw ResourceLimit(fmt::format("{}: over the memory cap of {:.2f} GiB and was stopped",
                                    step.what, step.limits.memory_cap_bytes / 1073741824.0));
  if (r.signal == SIGKILL)
    throw ResourceLimit(step.what + ": killed (SIGKILL: the kernel's out-of-memory killer, or "
                        "another process)" + said);
  if (r.signal != 0)
    throw RuntimeFailure(step.what + ": crashed with signal " + std::to_string(r.signal) + " (" +
                         strsignal(r.signal) + "); its log: " + cited(r.log_path));
  if (r.exit_code != 0) {
    // The child exits with the error table's code for its kind (python/torchperf/_child.py).
    // Only the codes it exits with on purpose map to a kind: any other (argparse's 2, a crash's)
    // is a failure of the step, named with its log.
    switch (error_kind_of_exit_code(r.exit_code).value_or(ErrorKind::kRuntime)) {
      case ErrorKind::kModel:
        throw ModelError(r.last_error.empty() ? step.what + ": not a program" : r.last_error);
      case ErrorKind::kWorkload:
        throw WorkloadError(r.last_error);
      case ErrorKind::kResourceLimit:
        throw ResourceLimit(step.what + said);
      case ErrorKind::kCompile:
        throw CompileError(step.what + said);
      default:
        throw RuntimeFailure(step.what + ": exited with " + std::to_string(r.exit_code) + said +
                             " (its log: " + cited(r.log_path) + ")");
    }
  }
  std::istringstream lines(r.out);
  std::string line, last;
  while (std::getline(lines, line))
    if (!line.empty() && line[0] == '{') last = line;
  try {
    return nlohmann::json::parse(last);
  } catch (const std::exception&) {
    throw RuntimeFailure(step.what + ": gave no answer (its log: " + cited(r.log_path) + ")");
  }
}

}  // namespace torchperf
