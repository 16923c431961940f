#include "torchperf/trace/device_summary.h"

#include <algorithm>
#include <map>
#include <utility>

namespace torchperf {

double DeviceSummary::overlap() const {
  return communication > 0 ? overlapped_communication / communication : -1;
}

const char* class_overlap_name(std::size_t index) {
  static const char* kNames[] = {"none",
                                 "computation",
                                 "communication",
                                 "computation + communication",
                                 "memory",
                                 "computation + memory",
                                 "communication + memory",
                                 "computation + communication + memory"};
  return index < 8 ? kNames[index] : "?";
}

namespace {

// The time each set of classes ran alone, swept over the events' starts and ends.
void sweep_classes(const Trace& trace, const std::vector<std::uint32_t>& events,
                   DeviceSummary& s) {
  struct Edge {
    std::int64_t at;
    int bit, delta;
  };
  std::vector<Edge> edges;
  edges.reserve(events.size() * 2);
  for (const std::uint32_t i : events) {
    const DeviceEvent& e = trace.device[i];
    if (e.duration <= 0) continue;
    const int bit = 1 << static_cast<int>(kernel_class(e));
    edges.push_back({e.start, bit, +1});
    edges.push_back({e.end(), bit, -1});
  }
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.at < b.at; });
  std::array<int, kKernelClasses> running{};
  std::size_t mask = 0;
  for (std::size_t k = 0; k < edges.size(); ++k) {
    if (k > 0 && mask != 0) s.class_overlap[mask] += static_cast<double>(edges[k].at - edges[k - 1].at);
    int& n = running[static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(edges[k].bit)))];
    n += edges[k].delta;
    mask = 0;
    for (std::size_t c = 0; c < kKernelClasses; ++c)
      if (running[c] > 0) mask |= std::size_t{1} << c;
  }
  constexpr std::size_t kCompute = 1, kCommunication = 2;
  for (std::size_t m = 1; m < 8; ++m) {
    s.busy += s.class_overlap[m];
    if (m & kCompute) s.compute += s.class_overlap[m];
    if (m & kCommunication) {
      s.communication += s.class_overlap[m];
      if (m & kCompute) s.overlapped_communication += s.class_overlap[m];
    }
  }
  s.non_compute = s.busy - s.compute;
  s.idle = s.span() - s.busy;
}

// One stream's gaps and launch queue; `order` holds its events sorted by start.
void summarize_stream(const Trace& trace, const LaunchIndex& launches,
                      const std::vector<std::uint32_t>& order, StreamSummary& s) {
  s.events = order.size();
  std::vector<std::pair<std::int64_t, int>> queue;  // (time, +1 launched / -1 started)
  for (std::size_t k = 0; k < order.size(); ++k) {
    const DeviceEvent& e = trace.device[order[k]];
    const HostEvent* launch = launches.find(e.correlation);
    if (launch != nullptr && launches.enqueues(*launch)) {
      queue.push_back({launch->start, +1});
      queue.push_back({e.start, -1});
    }
    if (k == 0) continue;
    const std::int64_t previous_end = trace.device[order[k - 1]].end();
    const double gap = static_cast<double>(std::max<std::int64_t>(0, e.start - previous_end));
    if (launch != nullptr && launch->start > previous_end) {
      s.host_wait += gap;
    } else if (e.start - previous_end < kKernelWaitGapNs) {
      s.kernel_wait += gap;
    } else {
      s.other_wait += gap;
    }
  }
  // Launches before starts at the same instant, so that a length never dips below zero.
  std::sort(queue.begin(), queue.end(), [](const auto& a, const auto& b) {
    return a.first < b.first || (a.first == b.first && a.second > b.second);
  });
  std::int64_t length = 0;
  double weighted = 0, sum = 0;
  for (std::size_t k = 0; k < queue.size(); ++k) {
    length += queue[k].second;
    s.max_queue = std::max(s.max_queue, length);
    sum += static_cast<double>(length);
    if (k + 1 < queue.size())
      weighted += static_cast<double>(length) * static_cast<double>(queue[k + 1].first - queue[k].first);
  }
  if (!queue.empty()) {
    s.mean_queue_over_changes = sum / static_cast<double>(queue.size());
    const double span = static_cast<double>(queue.back().first - queue.front().first);
    s.mean_queue = span > 0 ? weighted / span : 0;
  }
}

}  // namespace

DeviceSummary summarize_device(const Trace& trace, const LaunchIndex& launches,
                               const std::vector<std::uint32_t>& events) {
  DeviceSummary s;
  std::vector<std::uint32_t> work;
  work.reserve(events.size());
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const std::uint32_t i : events) {
    const DeviceEvent& e = trace.device[i];
    switch (e.kind) {
      case DeviceKind::kKernel:
        ++s.kernels;
        break;
      case DeviceKind::kMemcpy:
        ++s.memcpys;
        break;
      case DeviceKind::kMemset:
        ++s.memsets;
        break;
      case DeviceKind::kSync:  // a wait, not work
        continue;
    }
    work.push_back(i);
    s.class_time[static_cast<std::size_t>(kernel_class(e))] += static_cast<double>(e.duration);
    first = std::min(first, e.start);
    last = std::max(last, e.end());
  }
  if (work.empty()) return s;
  s.start = first;
  s.end = last;
  sweep_classes(trace, work, s);

  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::uint32_t>> by_stream;
  // Events on an unknown stream (-1) belong to no one stream's order: they count above, not here.
  for (const std::uint32_t i : work)
    if (trace.device[i].stream >= 0)
      by_stream[{trace.device[i].device, trace.device[i].stream}].push_back(i);
  for (auto& [key, order] : by_stream) {
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return trace.device[a].start < trace.device[b].start;
    });
    StreamSummary stream;
    stream.device = key.first;
    stream.stream = key.second;
    summarize_stream(trace, launches, order, stream);
    s.host_wait += stream.host_wait;
    s.kernel_wait += stream.kernel_wait;
    s.other_wait += stream.other_wait;
    s.streams.push_back(stream);
  }
  return s;
}

}  // namespace torchperf
