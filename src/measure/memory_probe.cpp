#include "torchperf/measure/memory_probe.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace torchperf {
namespace {

std::int64_t status_field_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream in(line.substr(field.size() + 1));
      std::int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

std::int64_t meminfo_bytes(const std::string& field) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == field + ":") return kib * 1024;
    meminfo.ignore(1 << 12, '\n');
  }
  return -1;
}

std::int64_t read_number(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

std::int64_t available_memory_bytes() {
  std::int64_t available = meminfo_bytes("MemAvailable");
  const std::int64_t limit = read_number("/sys/fs/cgroup/memory.max");
  const std::int64_t used = read_number("/sys/fs/cgroup/memory.current");
  if (limit > 0 && used >= 0 && (available < 0 || limit - used < available))
    available = std::max<std::int64_t>(0, limit - used);
  return available;
}

std::int64_t default_memory_cap_bytes() {
  const std::int64_t available = available_memory_bytes();
  if (available < 0) return 0;
  return current_rss_bytes() + available / 10 * 9;
}

MemoryWatchdog::MemoryWatchdog(std::int64_t cap_bytes,
                               std::function<void(std::int64_t rss)> on_exceeded) {
  if (cap_bytes <= 0) return;
  thread_ = std::thread([this, cap_bytes, on_exceeded = std::move(on_exceeded)] {
    while (!stop_.load()) {
      const std::int64_t rss = current_rss_bytes();
      if (rss > cap_bytes) {
        on_exceeded(rss);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

MemoryWatchdog::~MemoryWatchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::int64_t current_rss_bytes() { return status_field_bytes("VmRSS"); }

std::int64_t peak_rss_bytes() { return status_field_bytes("VmHWM"); }

bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  if (!clear) return false;
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

std::int64_t minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

std::int64_t memory_capacity_bytes() {
  std::int64_t total = meminfo_bytes("MemTotal");
  // A container's limit (cgroup v2, then v1) is what the kernel enforces, when it is lower.
  for (const char* path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const std::int64_t limit = read_number(path);
    if (limit <= 0) continue;
    if (total < 0 || limit < total) total = limit;
    break;
  }
  return total;
}

}  // namespace torchperf
