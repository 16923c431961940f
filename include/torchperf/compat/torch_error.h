// LibTorch errors carry TorchScript tracebacks and C++ backtraces whose layout changes between
// versions; this turns one into the single line a user needs.
#pragma once

#include <string>

namespace torchperf::compat {

// The innermost error message of a c10::Error's what(), without traceback or backtrace.
std::string concise_error_message(const std::string& what);

}  // namespace torchperf::compat
