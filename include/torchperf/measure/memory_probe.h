// Process memory and page-fault probes. The glibc allocator hands freed activation memory back to
// the kernel and faults it in again, so minor faults per iteration are part of the measurement.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <thread>

namespace torchperf {

// Resident set size now, and its high-water mark since start or the last reset.
std::int64_t current_rss_bytes();
std::int64_t peak_rss_bytes();
// Resets the high-water mark (Linux /proc/self/clear_refs); false where the kernel does not allow
// it.
bool reset_peak_rss();
// The memory this process may use: the cgroup limit where one is set, else MemTotal; -1 unknown.
std::int64_t memory_capacity_bytes();
// Minor (no I/O) page faults of the whole process so far.
std::int64_t minor_page_faults();
// Memory that can still be given to a process without swapping: MemAvailable, or what is left
// under the cgroup limit when that is less; -1 unknown.
std::int64_t available_memory_bytes();
// The one default memory cap (bench's run, each tune worker): this process's resident memory
// plus 90% of what is available now, so that the run stops before the machine starts swapping.
// 0 when the kernel does not say.
std::int64_t default_memory_cap_bytes();

// Watches this process's resident memory from a thread of its own (every 20 ms) and calls
// on_exceeded(rss) once it passes the cap. The timed code never waits on it; the caller decides
// what exceeding means (bench ends the process: nothing of a single run is left to keep).
class MemoryWatchdog {
 public:
  MemoryWatchdog(std::int64_t cap_bytes, std::function<void(std::int64_t rss)> on_exceeded);
  ~MemoryWatchdog();
  MemoryWatchdog(const MemoryWatchdog&) = delete;
  MemoryWatchdog& operator=(const MemoryWatchdog&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace torchperf
