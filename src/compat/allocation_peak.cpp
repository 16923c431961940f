#include "torchperf/compat/allocation_peak.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace torchperf::compat {
namespace {

// Only the scope's own allocations count: a free of memory allocated before it (the CUDA
// allocator reports those; the CPU allocator does not) is ignored.
class PeakReporter final : public c10::MemoryReportingInfoBase {
 public:
  explicit PeakReporter(c10::DeviceType device) : device_(device) {}

  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t /*total_allocated*/,
                         size_t /*total_reserved*/, c10::Device device) override {
    if (device.type() != device_ || alloc_size == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (alloc_size > 0) {
      sizes_[ptr] = alloc_size;
      held_ += alloc_size;
      peak_ = std::max(peak_, held_);
      return;
    }
    const auto it = sizes_.find(ptr);
    if (it == sizes_.end()) return;
    held_ -= it->second;
    sizes_.erase(it);
  }
  bool memoryProfilingEnabled() const override { return true; }

  std::int64_t peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }
  std::int64_t held() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

 private:
  c10::DeviceType device_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::int64_t> sizes_;
  std::int64_t held_ = 0, peak_ = 0;
};

}  // namespace

struct AllocationPeak::Scope {
  explicit Scope(DeviceKind device)
      : reporter(std::make_shared<PeakReporter>(device == DeviceKind::kCuda
                                                    ? c10::DeviceType::CUDA
                                                    : c10::DeviceType::CPU)),
        guard(c10::DebugInfoKind::PROFILER_STATE, reporter) {}
  std::shared_ptr<PeakReporter> reporter;
  c10::DebugInfoGuard guard;
};

AllocationPeak::AllocationPeak(DeviceKind device) : scope_(std::make_unique<Scope>(device)) {}
AllocationPeak::~AllocationPeak() = default;

std::int64_t AllocationPeak::peak_bytes() const { return scope_->reporter->peak(); }
std::int64_t AllocationPeak::held_bytes() const { return scope_->reporter->held(); }

}  // namespace torchperf::compat
