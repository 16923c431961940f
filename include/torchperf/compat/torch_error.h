// LibTorch errors carry TorchScript tracebacks and C++ backtraces whose layout changes between
// versions; this turns one into the single line a user needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace torchperf::compat {

// The innermost error message of a c10::Error's what(), without traceback or backtrace.
std::string concise_error_message(const std::string& what);

// Whether an error message is an allocation failure (LibTorch's CPU and CUDA allocators,
// std::bad_alloc), which is the machine's limit rather than the user's mistake.
bool is_out_of_memory_message(const std::string& message);

// The bytes an allocation failure asked for ("you tried to allocate N bytes", "Tried to allocate
// 2.00 GiB"), when the message says.
std::optional<std::int64_t> requested_allocation_bytes(const std::string& message);

}  // namespace torchperf::compat
