// Process memory and page-fault probes. The glibc allocator hands freed activation memory back to
// the kernel and faults it in again, so minor faults per iteration are part of the measurement.
#pragma once

#include <cstdint>
#include <optional>

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

}  // namespace torchperf
