// The CLI's exit codes, one per kind of failure (docs/cli.md lists them).
#pragma once

namespace torchperf::cli {

inline constexpr int kSuccess = 0;
inline constexpr int kRuntimeFailure = 1;
inline constexpr int kUsageError = 2;     // bad flag, option, knob, value or configuration
inline constexpr int kInvalidResult = 3;  // the run completed but its result is INVALID (NaN/Inf …)
inline constexpr int kLintFindings = 3;   // lint: a finding at or above --fail-on
inline constexpr int kModelError = 4;  // model or inputs file missing, corrupt or not TorchScript
inline constexpr int kWorkloadError = 5;  // the model rejected the inputs (shape, dtype, count)
inline constexpr int kResultsError = 6;  // a results file missing, empty, damaged, foreign, other schema
inline constexpr int kDiverged = 7;  // train: the loss became NaN/Inf with no scaler to skip it
inline constexpr int kTraceError = 8;  // trace: a trace file missing, not JSON, truncated, corrupt
inline constexpr int kResourceLimit = 9;  // stopped at the memory cap, or an allocation refused
inline constexpr int kCompileError = 10;  // AOTInductor could not compile the program (or export it)
inline constexpr int kInterrupted = 130;  // Ctrl-C (SIGINT): what finished is kept (tune --resume)
inline constexpr int kTerminated = 143;   // SIGTERM: the same, as timeout, systemd, Slurm send it

}  // namespace torchperf::cli
