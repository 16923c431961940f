// The CLI's exit codes: the error table's (include/torchperf/error.h), named for the CLI's use.
// docs/cli.md lists them; a test checks the two agree.
#pragma once

#include "torchperf/error.h"

namespace torchperf::cli {

inline constexpr int kSuccess = 0;
inline constexpr int kRuntimeFailure = exit_code_of(ErrorKind::kRuntime);
inline constexpr int kUsageError = exit_code_of(ErrorKind::kUsage);
inline constexpr int kInvalidResult = exit_code_of(ErrorKind::kInvalidResult);
inline constexpr int kLintFindings = exit_code_of(ErrorKind::kInvalidResult);
inline constexpr int kModelError = exit_code_of(ErrorKind::kModel);
inline constexpr int kWorkloadError = exit_code_of(ErrorKind::kWorkload);
inline constexpr int kResultsError = exit_code_of(ErrorKind::kResults);
inline constexpr int kDiverged = exit_code_of(ErrorKind::kDiverged);
inline constexpr int kTraceError = exit_code_of(ErrorKind::kTrace);
inline constexpr int kResourceLimit = exit_code_of(ErrorKind::kResourceLimit);
inline constexpr int kCompileError = exit_code_of(ErrorKind::kCompile);
inline constexpr int kInterrupted = exit_code_of(ErrorKind::kInterrupted);
inline constexpr int kTerminated = exit_code_of(ErrorKind::kTerminated);

}  // namespace torchperf::cli
