// The overview the PyTorch profiler's TensorBoard plugin showed, per step and on average: each
// instant of a step given to one category (kernel first, other last), device utilisation; and
// each device event given to the step that launched it, with Holistic Trace Analysis's figures
// per step and over all steps. Definitions and formulas: docs/trace.md. Torch-free.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/trace/device_summary.h"
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

// Where a device event's launch lies when no step holds it.
struct OutsideSteps {
  std::uint64_t no_launch = 0;  // its runtime call is not in the trace (or has no correlation)
  std::uint64_t before = 0, between = 0, after = 0;  // launched before, between or after the steps
  std::uint64_t total() const { return no_launch + before + between + after; }
};

struct StepBreakdown {
  std::int64_t number = -1;  // -1: the whole trace (no ProfilerStep annotations) or the average
  // The step's window: its ProfilerStep range on the host (steps follow one another, so windows
  // never overlap; a device running behind shows the previous step's kernels in it).
  std::int64_t start = 0, end = 0;
  std::array<double, kTimeCategories> time{};  // ns per category; they sum to the window
  bool has_device = false;
  double device_busy = 0;  // ns of the window during which a kernel ran (any kind)
  // The device events this step launched (each event in exactly one step, by the correlation
  // id of its runtime call) and Holistic Trace Analysis's figures over them.
  DeviceSummary device;

  double duration() const;
  // How long after the host ended the step its device work ended (its queue, in time); 0
  // without device work.
  double lag() const;
  double utilization() const;  // device_busy / duration (device traces)
  double share(TimeCategory category) const;
};

struct TraceOverview {
  std::vector<StepBreakdown> steps;
  StepBreakdown average;         // the steps' mean, category by category
  bool annotated_steps = false;  // from ProfilerStep#N (or train's steps), not the whole trace
  bool has_device = false;
  // HTA's figures over the steps' device work: every event a step launched (every device event
  // when the trace has no steps). Communication overlap is device.overlap().
  DeviceSummary device;
  DeviceSummary outside;  // the device events no step launched, and where their launches lie
  OutsideSteps outside_where;
  // The trace has no runtime calls to follow (a device-only profile): each device event went to
  // the step in which it starts.
  bool by_device_start = false;
  double overlap() const { return device.overlap(); }
};

TraceOverview overview(const Trace& trace);

}  // namespace torchperf
