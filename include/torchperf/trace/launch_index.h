// Kernels joined to the host calls that launched them, by correlation id: the index every view
// that relates host and device time reads. Header-only and torch-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "torchperf/trace/trace.h"

namespace torchperf {

struct Launch {
  std::int64_t correlation = 0;
  std::uint32_t host = 0;  // index into Trace::host
};

// The runtime calls that put one kernel, copy or set in a stream's queue: Holistic Trace
// Analysis's list. A graph launch (many kernels from one call) and a synchronous copy are not.
inline bool enqueues_one_event(std::string_view name) {
  for (const std::string_view call :
       {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
        "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync",
        "hipMemsetAsync", "hipMemcpyWithStream"})
    if (name == call) return true;
  return false;
}

class LaunchIndex {
 public:
  explicit LaunchIndex(const Trace& trace) : trace_(trace) {
    for (std::uint32_t i = 0; i < trace.host.size(); ++i) {
      const HostEvent& e = trace.host[i];
      if (e.kind != HostKind::kRuntime || e.correlation < 0) continue;
      launches_.push_back({e.correlation, i});
      if (e.name >= enqueues_.size()) enqueues_.resize(e.name + 1, kUnknown);
      if (enqueues_[e.name] == kUnknown)
        enqueues_[e.name] = enqueues_one_event(trace.name(e.name)) ? kYes : kNo;
    }
    // A correlation id seen twice (concatenated traces) finds its first call in the file.
    std::sort(launches_.begin(), launches_.end(), [](const Launch& a, const Launch& b) {
      return a.correlation < b.correlation || (a.correlation == b.correlation && a.host < b.host);
    });
  }
  // The runtime call with this correlation id, or nullptr.
  const HostEvent* find(std::int64_t correlation) const {
    if (correlation < 0) return nullptr;
    const auto it =
        std::lower_bound(launches_.begin(), launches_.end(), correlation,
                         [](const Launch& l, std::int64_t c) { return l.correlation < c; });
    if (it == launches_.end() || it->correlation != correlation) return nullptr;
    return &trace_.host[it->host];
  }
  bool empty() const { return launches_.empty(); }
  // Whether this runtime call (one find() returned) queues one event: enqueues_one_event.
  bool enqueues(const HostEvent& call) const {
    return call.name < enqueues_.size() && enqueues_[call.name] == kYes;
  }

 private:
  static constexpr char kUnknown = 0, kYes = 1, kNo = 2;
  const Trace& trace_;
  std::vector<Launch> launches_;
  std::vector<char> enqueues_;  // by name id
};

}  // namespace torchperf
