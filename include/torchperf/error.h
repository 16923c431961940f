// The error hierarchy shared by every part, and the one table of error kinds: each kind's name
// (as the worker protocol and the Python side say it) and its exit code (as the CLI and the Python
// children exit with it). Messages are for the user: they name the input and say what was
// expected and what was found.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace torchperf {

// Every way a run can fail, one row each below. Two kinds may share an exit code (a usage and a
// configuration error are both the user's flags); a name is never reused.
enum class ErrorKind {
  kRuntime,
  kProtocol,
  kUsage,
  kConfig,
  kInvalidResult,
  kModel,
  kWorkload,
  kResults,
  kDiverged,
  kTrace,
  kResourceLimit,
  kCompile,
  kCluster,
  kInterrupted,
  kTerminated,
};

struct ErrorKindRow {
  ErrorKind kind;
  std::string_view name;  // on the wire: {"ok": false, "error": {"kind": NAME, "message": ...}}
  int exit_code;
  std::string_view meaning;  // docs/cli.md's exit-code table says the same (a test checks)
};

// The table (PyTorch's torch/csrc/Exceptions.h maps its error classes in one place too). The
// Python side reads it through `torchperf __protocol` (python/torchperf/error_kinds.py).
inline constexpr ErrorKindRow kErrorKinds[] = {
    {ErrorKind::kRuntime, "runtime", 1, "a failure while running that is not the user's input"},
    {ErrorKind::kProtocol, "protocol", 1, "a malformed message between torchperf and its worker"},
    {ErrorKind::kUsage, "usage", 2, "a bad flag, option or value"},
    {ErrorKind::kConfig, "config", 2, "a knob, knob value or configuration that is unknown or does not apply"},
    {ErrorKind::kInvalidResult, "invalid-result", 3,
     "the run completed but its result is INVALID (lint: a finding at or above --fail-on)"},
    {ErrorKind::kModel, "model", 4, "the model or inputs file is missing, corrupt or not a model"},
    {ErrorKind::kWorkload, "workload", 5, "the model rejected its inputs (shape, dtype, count)"},
    {ErrorKind::kResults, "results", 6,
     "a results file or folder is missing, empty, damaged, foreign or of another schema"},
    {ErrorKind::kDiverged, "diverged", 7, "train: the loss became NaN or Inf with no scaler to skip it"},
    {ErrorKind::kTrace, "trace", 8, "trace: a trace file missing, not JSON, truncated or corrupt"},
    {ErrorKind::kResourceLimit, "out-of-memory", 9,
     "stopped at a bound: the memory cap, an allocation refused, a time no call fits in"},
    {ErrorKind::kCompile, "compile", 10, "a compile or export failed or ran over its time limit"},
    {ErrorKind::kCluster, "cluster", 11,
     "tune --cluster: no cluster answers at the address, or none of its nodes can measure a point"},
    {ErrorKind::kInterrupted, "interrupted", 130, "stopped with Ctrl-C; what finished is kept"},
    {ErrorKind::kTerminated, "terminated", 143, "stopped with SIGTERM; what finished is kept"},
};

constexpr const ErrorKindRow& row_of(ErrorKind kind) {
  for (const auto& row : kErrorKinds)
    if (row.kind == kind) return row;
  return kErrorKinds[0];
}
constexpr int exit_code_of(ErrorKind kind) { return row_of(kind).exit_code; }
inline std::string name_of(ErrorKind kind) { return std::string(row_of(kind).name); }

inline std::optional<ErrorKind> error_kind_named(std::string_view name) {
  for (const auto& row : kErrorKinds)
    if (row.name == name) return row.kind;
  return std::nullopt;
}

// The kind a child's exit code says (the first row with it: usage for 2, invalid-result for 3).
inline std::optional<ErrorKind> error_kind_of_exit_code(int code) {
  for (const auto& row : kErrorKinds)
    if (row.exit_code == code) return row.kind;
  return std::nullopt;
}

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  virtual ErrorKind kind() const noexcept { return ErrorKind::kRuntime; }
};

// A flag, option or configuration string the user wrote is malformed or contradictory.
class UsageError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kUsage; }
};

// A results file (tune's journal) is missing, empty, damaged, foreign or of another schema.
class ResultsError : public UsageError {
 public:
  using UsageError::UsageError;
  ErrorKind kind() const noexcept override { return ErrorKind::kResults; }
};

// A knob, knob value or configuration that is unknown or does not apply to the workload.
class ConfigError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kConfig; }
};

// tune --cluster: no Ray cluster answers at the address, or none of its nodes can measure a
// point (no torchperf_slot, torchperf or the model's path missing there, every node lost).
class ClusterError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kCluster; }
};

// The model file (or inputs file) is missing, unreadable or not what it claims to be.
class ModelError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kModel; }
};

// The model loaded but rejected the inputs it was given (shape, dtype, count).
class WorkloadError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kWorkload; }
};

// Anything that failed while running that is not the user's input.
class RuntimeFailure : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kRuntime; }
};

// Training produced a loss that is not finite (NaN or Inf) with no gradient scaler to skip the
// step: the run is meaningless from there on.
class TrainingDiverged : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kDiverged; }
};

// A profiler trace (`trace`) that cannot be read: missing, not JSON, truncated, a corrupt gzip,
// no trace events, or (with --strict) an event with missing or mistyped fields.
class TraceError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kTrace; }
};

// A run stopped at a bound: its memory cap (inputs or resident memory over it, an allocation the
// machine refused) or a time budget no single call fits in.
class ResourceLimit : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kResourceLimit; }
};

// A compile or export step failed: AOTInductor refused the program (an operator it cannot lower,
// no C++ compiler), the compile exceeded its time limit, or --from-python could not export.
class CompileError : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kCompile; }
};

// The user stopped a long run (Ctrl-C); what finished before is kept.
class Interrupted : public Error {
 public:
  using Error::Error;
  ErrorKind kind() const noexcept override { return ErrorKind::kInterrupted; }
};

// Throws the exception class of kind: how a kind read from a worker's reply or a child's exit
// code becomes an error again.
[[noreturn]] inline void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::kUsage:
      throw UsageError(message);
    case ErrorKind::kConfig:
      throw ConfigError(message);
    case ErrorKind::kResults:
      throw ResultsError(message);
    case ErrorKind::kModel:
      throw ModelError(message);
    case ErrorKind::kWorkload:
      throw WorkloadError(message);
    case ErrorKind::kDiverged:
      throw TrainingDiverged(message);
    case ErrorKind::kTrace:
      throw TraceError(message);
    case ErrorKind::kResourceLimit:
      throw ResourceLimit(message);
    case ErrorKind::kCompile:
      throw CompileError(message);
    case ErrorKind::kCluster:
      throw ClusterError(message);
    case ErrorKind::kInterrupted:
    case ErrorKind::kTerminated:
      throw Interrupted(message);
    case ErrorKind::kRuntime:
    case ErrorKind::kProtocol:
    case ErrorKind::kInvalidResult:
      break;
  }
  throw RuntimeFailure(message);
}

}  // namespace torchperf
