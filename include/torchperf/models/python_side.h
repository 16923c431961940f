// The Python side (python/torchperf), run with the project venv's interpreter as a child process,
// never linked in: where that interpreter and package are, and one call that runs a module of it
// and turns its exit code and last line into torchperf's errors.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "torchperf/process/command_run.h"

namespace torchperf {

// $TORCHPERF_PYTHON, else the venv interpreter this build was configured with.
std::string python_interpreter();
// $TORCHPERF_PYTHON_PATH, else the source tree's python/ folder.
std::string python_package_dir();

// environment with PYTHONPATH set for a child of the Python side: the package first, then the
// user's own PYTHONPATH (a --from-python module imports from it).
ChildEnvironment with_python_path(ChildEnvironment environment);

// The engines installed beside torch in the Python worker's Python, by runtime name
// (onnxruntime, openvino) with their versions, and whether each has a CUDA execution provider:
// asked once per process (`python -m torchperf.engines`, which reads package metadata and imports
// none of them). None where that Python cannot say; TORCHPERF_ENGINES=none leaves them out.
struct InstalledEngine {
  std::string name, version;
  bool cuda = false;
};
const std::vector<InstalledEngine>& installed_engines();

struct PythonStep {
  std::string module;  // e.g. "torchperf.aoti_compile"
  std::vector<std::string> args;
  ChildEnvironment environment;  // over ours (CXX for the compiler, ...)
  CommandLimits limits;
  std::string what;  // names the step in errors: "compiling 'm.pt2' with AOTInductor"
  std::string log_path;  // its stderr; "" for a file in the run's temporary folder
};

// Runs the step and returns its one line of JSON. Throws, with the child's own last line:
// ModelError (exit 4), WorkloadError (5), CompileError (10, or the time limit passed),
// ResourceLimit (9, the memory cap, or killed by SIGKILL: the kernel's out-of-memory killer),
// Interrupted (keep_going said to stop), RuntimeFailure (anything else: no interpreter, a crash).
nlohmann::json run_python_step(const PythonStep& step);

}  // namespace torchperf
