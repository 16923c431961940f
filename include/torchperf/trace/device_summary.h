// Holistic Trace Analysis's device figures over a set of device events (one step's, or every
// step's): events by kind, time per kernel class and per overlap of classes, the temporal
// breakdown (idle, compute, non-compute), idle time per stream with its causes, communication
// overlapped by computation, and each stream's launch queue. Definitions: docs/trace.md. Torch-free.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "torchperf/trace/launch_index.h"
#include "torchperf/trace/trace.h"

namespace torchperf {

// A gap on a stream shorter than this, with the next event already launched, is the overhead
// of back-to-back launches ("kernel wait"); longer, it is "other". HTA's consecutive_kernel_delay.
inline constexpr std::int64_t kKernelWaitGapNs = 30'000;

struct StreamSummary {
  std::int32_t device = 0, stream = 0;
  std::uint64_t events = 0;
  // The gaps between one event's end and the next one's start on this stream, by cause: the
  // host had not launched the next one yet (host wait), the gap is a launch's overhead (kernel
  // wait), or neither (other).
  double host_wait = 0, kernel_wait = 0, other_wait = 0;  // ns
  // Launched but not yet started events (+1 at the runtime call's start, -1 at the event's
  // start; HTA's queue length): the largest, its time-weighted mean, and HTA's mean over the
  // changes. Only events a launch call queued one by one count (enqueues_one_event): their
  // launch must be in the trace, and a graph launch's kernels are not counted.
  std::int64_t max_queue = 0;
  double mean_queue = 0, mean_queue_over_changes = 0;
  double idle() const { return host_wait + kernel_wait + other_wait; }
};

struct DeviceSummary {
  std::uint64_t kernels = 0, memcpys = 0, memsets = 0;  // events (syncs are waits, not counted)
  std::array<double, kKernelClasses> class_time{};      // ns, durations summed per class
  // The time during which exactly this set of classes ran, indexed by a bit per class
  // (1 computation, 2 communication, 4 memory): HTA's kernel type breakdown, where
  // "COMPUTATION overlapping MEMORY" is index 5.
  std::array<double, 8> class_overlap{};
  // No device work (a mean of steps with some work is not empty, whatever its rounded counts).
  bool empty() const { return events() == 0 && busy == 0; }
  std::uint64_t events() const { return kernels + memcpys + memsets; }
  // First start to last end, on any stream: the device span (HTA's "kernel time").
  std::int64_t start = 0, end = 0;
  double busy = 0;         // ns when any event ran
  double compute = 0;      // ns when a computation kernel ran
  double non_compute = 0;  // busy, no computation kernel running
  double idle = 0;         // span minus busy
  double host_wait = 0, kernel_wait = 0, other_wait = 0;  // the streams' gaps by cause, summed
  double communication = 0, overlapped_communication = 0;  // ns, and the part computing meanwhile
  std::vector<StreamSummary> streams;  // by device, then stream; unknown streams (-1) are not
                                       // in a stream's order and have none

  double span() const { return static_cast<double>(end - start); }
  double overlap() const;  // overlapped / communication, or -1 without communication
};

// The summary of trace.device[i] for each i in `events` (syncs among them are skipped).
DeviceSummary summarize_device(const Trace& trace, const LaunchIndex& launches,
                               const std::vector<std::uint32_t>& events);

const char* class_overlap_name(std::size_t index);  // "computation + memory" …

}  // namespace torchperf
