// The error hierarchy shared by every part. Messages are for the user: they name the input and say
// what was expected and what was found. The CLI maps each kind to its own exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace torchperf {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A flag, option or configuration string the user wrote is malformed or contradictory.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A results file (tune's journal) is missing, empty, damaged, foreign or of another schema.
class ResultsError : public UsageError {
 public:
  using UsageError::UsageError;
};

// A knob, knob value or configuration that is unknown or does not apply to the workload.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// The model file (or inputs file) is missing, unreadable or not what it claims to be.
class ModelError : public Error {
 public:
  using Error::Error;
};

// The model loaded but rejected the inputs it was given (shape, dtype, count).
class WorkloadError : public Error {
 public:
  using Error::Error;
};

// Anything that failed while running that is not the user's input.
class RuntimeFailure : public Error {
 public:
  using Error::Error;
};

// Training produced a loss that is not finite (NaN or Inf) with no gradient scaler to skip the
// step: the run is meaningless from there on.
class TrainingDiverged : public Error {
 public:
  using Error::Error;
};

// A profiler trace (`trace`) that cannot be read: missing, not JSON, truncated, a corrupt gzip,
// no trace events, or (with --strict) an event with missing or mistyped fields.
class TraceError : public Error {
 public:
  using Error::Error;
};

// A run stopped at a bound: its memory cap (inputs or resident memory over it, an allocation the
// machine refused) or a time budget no single call fits in.
class ResourceLimit : public Error {
 public:
  using Error::Error;
};

// A compile or export step failed: AOTInductor refused the program (an operator it cannot lower,
// no C++ compiler), the compile exceeded its time limit, or --from-python could not export.
class CompileError : public Error {
 public:
  using Error::Error;
};

// The user stopped a long run (Ctrl-C); what finished before is kept.
class Interrupted : public Error {
 public:
  using Error::Error;
};

}  // namespace torchperf
