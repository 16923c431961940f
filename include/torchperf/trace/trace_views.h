// The detailed views of one trace: operators (host self and total time, the device time of the
// kernels they launched), kernels (by name, with their class), launch statistics (CPU launch
// duration, GPU duration, launch delay, short kernels), and frequent kernel sequences. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/trace/trace.h"

namespace torchperf {

struct OperatorRow {
  std::string name;
  std::string shapes;  // "Input Dims" as written, when grouped by shape
  std::uint64_t calls = 0;
  double host_total = 0;    // ns, every call's duration (nested calls of the same name included)
  double host_self = 0;     // ns, minus the operators and annotations called inside it
  double device_total = 0;  // ns, kernels, copies and sets it launched itself
};

// Sorted by host self time, largest first.
std::vector<OperatorRow> operator_view(const Trace& trace, bool by_shape);

const char* kernel_class_name(KernelClass k);

struct KernelRow {
  std::string name;
  KernelClass kind = KernelClass::kComputation;
  std::uint64_t count = 0;
  double total = 0, max = 0;  // ns
  double share = 0;           // of all device time (kernels, copies, sets)
  double mean() const { return count > 0 ? total / static_cast<double>(count) : 0; }
};

// Kernels, copies and sets by name, largest total first.
std::vector<KernelRow> kernel_view(const Trace& trace);

// Copies and sets by kind: how many, the bytes they moved, their time on the device and the
// bandwidth that makes (HTA's memory bandwidth counters, as one figure a kind).
struct CopyRow {
  std::string kind;  // "HtoD pageable", "HtoD pinned", "HtoD", "DtoH", "DtoD", "other", "memset"
  std::uint64_t count = 0;
  double bytes = 0, time = 0;  // bytes, ns
  double gigabytes_per_second() const { return time > 0 ? bytes / time : 0; }  // bytes/ns = GB/s
};

// The kinds present, in the order above.
std::vector<CopyRow> copy_view(const Trace& trace);

struct KernelClassTotals {
  double computation = 0, communication = 0, memory = 0;  // ns
};
KernelClassTotals kernel_class_totals(const std::vector<KernelRow>& rows);

struct LaunchRow {
  std::string name;
  std::uint64_t count = 0;
  double launch_total = 0, gpu_total = 0, delay_total = 0;  // ns
  std::uint64_t short_kernels = 0;
};

struct Distribution {
  double median = 0, p90 = 0, max = 0;  // ns
};

// HTA's kernel launch statistics (get_cuda_kernel_launch_stats): for each kernel launched one
// by one (enqueues_one_event: a graph launch's kernels are not) with its launch in the trace,
// the CPU duration of the launch call, the GPU duration, and the launch delay from the call's
// end to the kernel's start (0 if negative). A short kernel runs for less time than its launch
// took on the CPU, a launch of at most 50 us: the host cannot keep the device busy with it.
// Longer launches are runtime outliers; delays over 100 us are delay outliers.
inline constexpr std::int64_t kRuntimeOutlierNs = 50'000;  // HTA's runtime_cutoff
inline constexpr std::int64_t kDelayOutlierNs = 100'000;   // HTA's launch_delay_cutoff
struct LaunchStats {
  std::uint64_t kernels = 0, matched = 0, short_kernels = 0;
  std::uint64_t runtime_outliers = 0, delay_outliers = 0;
  Distribution launch, gpu, delay;
  std::vector<LaunchRow> rows;  // by name, most short kernels first, then total delay
};

LaunchStats launch_stats(const Trace& trace);

// A run of `length` computation kernels that follow one another on a stream, and how often it
// recurs (HTA's frequent kernel sequences, over every stream rather than one operator's): the
// repeated short runs are what torch.compile or a CUDA graph would fuse or launch as one.
struct SequenceRow {
  std::vector<std::string> kernels;
  std::uint64_t count = 0;  // occurrences, overlapping ones included
  double kernel_time = 0;   // ns, the kernels' durations over every occurrence
  double gap_time = 0;      // ns, the idle gaps between them
  double total() const { return kernel_time + gap_time; }
};

// Sequences seen at least twice, by total time (kernels and gaps), largest first. Copies, sets
// and communication kernels end a run; kernels on an unknown stream are in none.
std::vector<SequenceRow> kernel_sequences(const Trace& trace, std::size_t length);

}  // namespace torchperf
