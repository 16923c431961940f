// The overview the PyTorch profiler's TensorBoard plugin showed, per step and on average: each
// instant of a step given to one category (kernel first, other last), device utilisation, and
// Holistic Trace Analysis's temporal and idle-time breakdowns. Definitions and formulas:
// docs/trace.md. Torch-free.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/trace/trace.h"

namespace torchperf {

// In priority order: an instant where a computation kernel runs is "kernel" whatever else runs.
enum class TimeCategory {
  kKernel,         // computation kernels on the device
  kCommunication,  // NCCL/RCCL kernels, or a host collective (gloo) on a CPU-only rank
  kMemcpy,
  kMemset,
  kRuntime,     // CUDA/HIP runtime calls on the host (launches, copies, syncs)
  kDataLoader,  // the DataLoader's __next__ (or torchperf train's data wait)
  kCpuExec,     // host operators
  kOther,       // none of these
};
inline constexpr std::size_t kTimeCategories = 8;
const char* category_name(TimeCategory category);  // "kernel", "data loader" …
const char* category_key(TimeCategory category);   // "kernel", "data_loader" …

// A gap on the device shorter than this, with the next kernel already queued, is the launch
// overhead of back-to-back kernels ("kernel wait"); longer, it is "other wait".
inline constexpr std::int64_t kKernelWaitGapNs = 10'000;

struct StepBreakdown {
  std::int64_t number = -1;  // -1: the whole trace (no ProfilerStep annotations) or the average
  std::int64_t start = 0, end = 0;             // the step's window, ns
  std::array<double, kTimeCategories> time{};  // ns per category; they sum to the window
  bool has_device = false;
  double device_busy = 0;                                 // ns during which a kernel ran (any kind)
  double compute = 0, non_compute = 0, idle = 0;          // HTA's temporal breakdown, ns
  double host_wait = 0, kernel_wait = 0, other_wait = 0;  // the idle time's causes, ns
  std::uint64_t kernels = 0;  // device kernels that started in the window

  double duration() const;
  double utilization() const;  // device_busy / duration (device traces)
  double share(TimeCategory category) const;
};

struct TraceOverview {
  std::vector<StepBreakdown> steps;
  StepBreakdown average;         // the steps' mean, category by category
  bool annotated_steps = false;  // from ProfilerStep#N (or train's steps), not the whole trace
  bool has_device = false;
  // Communication kernels, and the part of them that ran while a computation kernel ran
  // (HTA's communication/computation overlap), over all steps.
  double communication = 0, overlapped_communication = 0;
  double overlap() const;  // overlapped / communication, or -1 without communication
};

TraceOverview overview(const Trace& trace);

}  // namespace torchperf
