// Kernels joined to the host calls that launched them, by correlation id: the index every view
// that relates host and device time reads. Header-only and torch-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "torchperf/trace/trace.h"

namespace torchperf {

struct Launch {
  std::int64_t correlation = 0;
  std::uint32_t host = 0;  // index into Trace::host
};

class LaunchIndex {
 public:
  explicit LaunchIndex(const Trace& trace) : trace_(trace) {
    for (std::uint32_t i = 0; i < trace.host.size(); ++i)
      if (trace.host[i].kind == HostKind::kRuntime && trace.host[i].correlation >= 0)
        launches_.push_back({trace.host[i].correlation, i});
    std::sort(launches_.begin(), launches_.end(),
              [](const Launch& a, const Launch& b) { return a.correlation < b.correlation; });
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

 private:
  const Trace& trace_;
  std::vector<Launch> launches_;
};

}  // namespace torchperf
