// The most memory that what this thread allocates inside a scope holds at once: the figure that
// bounds a served call by what memory allows (issue 63). Read from c10's memory-reporting hook
// (the one the profiler's profile_memory reads), so it counts the allocator's own bytes where the
// process's resident size cannot: glibc keeps freed pages, and a second call reuses them unseen.
#pragma once

#include <cstdint>
#include <memory>

#include "torchperf/compat/torch_compat.h"

namespace torchperf::compat {

// Counts from construction to destruction; one at a time on a thread (the hook is the thread's
// profiler slot, so a profiler running on this thread meanwhile would not see its memory events).
// Allocations made by other threads (an intra-op pool's scratch) are not seen.
class AllocationPeak {
 public:
  // Counts the allocations of one device kind: the CPU allocator's, or the CUDA caching
  // allocator's (of every CUDA device).
  explicit AllocationPeak(DeviceKind device);
  ~AllocationPeak();
  AllocationPeak(const AllocationPeak&) = delete;
  AllocationPeak& operator=(const AllocationPeak&) = delete;

  // The most bytes allocated in the scope and not yet freed at any one moment.
  std::int64_t peak_bytes() const;
  // Bytes allocated in the scope and not freed yet.
  std::int64_t held_bytes() const;

 private:
  struct Scope;
  std::unique_ptr<Scope> scope_;
};

}  // namespace torchperf::compat
