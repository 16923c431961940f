#include "torchperf/trace/trace_views.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "torchperf/trace/launch_index.h"

namespace torchperf {
namespace {

Distribution distribution(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) {
    return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5)];
  };
  d.median = at(0.5);
  d.p90 = at(0.9);
  d.max = values.back();
  return d;
}

// Device time per correlation id (a launch can start several events: a copy and a kernel).
std::unordered_map<std::int64_t, double> device_time_by_correlation(const Trace& trace) {
  std::unordered_map<std::int64_t, double> time;
  time.reserve(trace.device.size());
  for (const DeviceEvent& e : trace.device)
    if (e.correlation >= 0 && e.kind != DeviceKind::kSync)
      time[e.correlation] += static_cast<double>(e.duration);
  return time;
}

}  // namespace

const char* kernel_class_name(KernelClass k) {
  switch (k) {
    case KernelClass::kComputation:
      return "computation";
    case KernelClass::kCommunication:
      return "communication";
    case KernelClass::kMemory:
      return "memory";
  }
  return "?";
}

std::vector<OperatorRow> operator_view(const Trace& trace, bool by_shape) {
  // Host events per thread, outer before inner: (thread, start, longest first), then file order.
  // The keys are copied out so that the sort does not chase indices into the events.
  struct Key {
    std::int64_t start, negative_duration;
    std::uint32_t thread, index;
    bool operator<(const Key& o) const {
      if (thread != o.thread) return thread < o.thread;
      if (start != o.start) return start < o.start;
      if (negative_duration != o.negative_duration) return negative_duration < o.negative_duration;
      return index < o.index;
    }
  };
  std::vector<Key> keys;
  keys.reserve(trace.host.size());
  for (std::uint32_t i = 0; i < trace.host.size(); ++i)
    keys.push_back({trace.host[i].start, -trace.host[i].duration, trace.host[i].thread, i});
  std::sort(keys.begin(), keys.end());
  std::vector<std::uint32_t> order;
  order.reserve(keys.size());
  for (const Key& k : keys) order.push_back(k.index);
  keys = std::vector<Key>();
  const auto device_time = device_time_by_correlation(trace);
  std::vector<double> self(trace.host.size(), 0), device(trace.host.size(), 0);
  for (std::uint32_t i = 0; i < trace.host.size(); ++i)
    self[i] = static_cast<double>(trace.host[i].duration);
  std::vector<std::uint32_t> stack;
  std::uint32_t thread = UINT32_MAX;
  for (const std::uint32_t i : order) {
    const HostEvent& e = trace.host[i];
    if (e.thread != thread) {
      stack.clear();
      thread = e.thread;
    }
    while (!stack.empty() && trace.host[stack.back()].end() <= e.start) stack.pop_back();
    if (e.kind == HostKind::kRuntime) {
      // The launched device time goes to the innermost operator around the call.
      const auto it = device_time.find(e.correlation);
      if (it != device_time.end())
        for (auto s = stack.rbegin(); s != stack.rend(); ++s)
          if (trace.host[*s].kind == HostKind::kOperator) {
            device[*s] += it->second;
            break;
          }
      continue;  // a runtime call is not an operator's child in PyTorch's self time
    }
    if (!stack.empty())
      self[stack.back()] = std::max(0.0, self[stack.back()] - static_cast<double>(e.duration));
    stack.push_back(i);
  }
  std::unordered_map<std::uint64_t, std::size_t> index;
  std::vector<OperatorRow> rows;
  for (std::uint32_t i = 0; i < trace.host.size(); ++i) {
    const HostEvent& e = trace.host[i];
    if (e.kind != HostKind::kOperator) continue;
    const std::uint64_t key =
        (static_cast<std::uint64_t>(e.name) << 32) | (by_shape ? e.shapes : 0u);
    auto [it, added] = index.emplace(key, rows.size());
    if (added) {
      OperatorRow row;
      row.name = trace.name(e.name);
      if (by_shape) row.shapes = trace.name(e.shapes);
      rows.push_back(row);
    }
    OperatorRow& row = rows[it->second];
    ++row.calls;
    row.host_total += static_cast<double>(e.duration);
    row.host_self += self[i];
    row.device_total += device[i];
  }
  std::sort(rows.begin(), rows.end(), [](const OperatorRow& a, const OperatorRow& b) {
    return a.host_self > b.host_self || (a.host_self == b.host_self && a.name < b.name);
  });
  return rows;
}

std::vector<KernelRow> kernel_view(const Trace& trace) {
  std::unordered_map<std::uint32_t, std::size_t> index;
  std::vector<KernelRow> rows;
  double all = 0;
  for (const DeviceEvent& e : trace.device) {
    if (e.kind == DeviceKind::kSync) continue;
    auto [it, added] = index.emplace(e.name, rows.size());
    if (added) {
      KernelRow row;
      row.name = trace.name(e.name);
      row.kind = kernel_class(e);
      rows.push_back(row);
    }
    KernelRow& row = rows[it->second];
    const double d = static_cast<double>(e.duration);
    ++row.count;
    row.total += d;
    row.max = std::max(row.max, d);
    all += d;
  }
  for (KernelRow& row : rows) row.share = all > 0 ? row.total / all : 0;
  std::sort(rows.begin(), rows.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.total > b.total || (a.total == b.total && a.name < b.name);
  });
  return rows;
}

std::vector<CopyRow> copy_view(const Trace& trace) {
  const char* kKinds[] = {"HtoD pageable", "HtoD pinned", "HtoD", "DtoH", "DtoD", "other", "memset"};
  std::array<CopyRow, 7> rows;
  for (std::size_t k = 0; k < rows.size(); ++k) rows[k].kind = kKinds[k];
  for (const DeviceEvent& e : trace.device) {
    std::size_t k = 0;
    if (e.kind == DeviceKind::kMemset) {
      k = 6;
    } else if (e.kind != DeviceKind::kMemcpy) {
      continue;
    } else {
      switch (e.copy) {
        case CopyKind::kHostToDevicePageable: k = 0; break;
        case CopyKind::kHostToDevicePinned: k = 1; break;
        case CopyKind::kHostToDevice: k = 2; break;
        case CopyKind::kDeviceToHost: k = 3; break;
        case CopyKind::kDeviceToDevice: k = 4; break;
        case CopyKind::kNone:
        case CopyKind::kOther: k = 5; break;
      }
    }
    ++rows[k].count;
    rows[k].bytes += static_cast<double>(e.bytes);
    rows[k].time += static_cast<double>(e.duration);
  }
  std::vector<CopyRow> present;
  for (const CopyRow& r : rows)
    if (r.count > 0) present.push_back(r);
  return present;
}

KernelClassTotals kernel_class_totals(const std::vector<KernelRow>& rows) {
  KernelClassTotals t;
  for (const KernelRow& r : rows) {
    switch (r.kind) {
      case KernelClass::kComputation:
        t.computation += r.total;
        break;
      case KernelClass::kCommunication:
        t.communication += r.total;
        break;
      case KernelClass::kMemory:
        t.memory += r.total;
        break;
    }
  }
  return t;
}

LaunchStats launch_stats(const Trace& trace) {
  LaunchStats stats;
  const LaunchIndex launches(trace);
  std::vector<double> launch, gpu, delay;
  std::unordered_map<std::uint32_t, std::size_t> index;
  for (const DeviceEvent& e : trace.device) {
    if (e.kind != DeviceKind::kKernel) continue;
    ++stats.kernels;
    const HostEvent* call = launches.find(e.correlation);
    if (call == nullptr || !launches.enqueues(*call)) continue;
    ++stats.matched;
    const double l = static_cast<double>(call->duration);
    const double g = static_cast<double>(e.duration);
    const std::int64_t wait = std::max<std::int64_t>(0, e.start - call->end());
    const double d = static_cast<double>(wait);
    launch.push_back(l);
    gpu.push_back(g);
    delay.push_back(d);
    if (call->duration > kRuntimeOutlierNs) ++stats.runtime_outliers;
    if (wait > kDelayOutlierNs) ++stats.delay_outliers;
    const bool is_short = g < l && call->duration <= kRuntimeOutlierNs;
    if (is_short) ++stats.short_kernels;
    auto [it, added] = index.emplace(e.name, stats.rows.size());
    if (added) stats.rows.push_back({trace.name(e.name)});
    LaunchRow& row = stats.rows[it->second];
    ++row.count;
    row.launch_total += l;
    row.gpu_total += g;
    row.delay_total += d;
    if (is_short) ++row.short_kernels;
  }
  stats.launch = distribution(std::move(launch));
  stats.gpu = distribution(std::move(gpu));
  stats.delay = distribution(std::move(delay));
  std::sort(stats.rows.begin(), stats.rows.end(), [](const LaunchRow& a, const LaunchRow& b) {
    if (a.short_kernels != b.short_kernels) return a.short_kernels > b.short_kernels;
    if (a.delay_total != b.delay_total) return a.delay_total > b.delay_total;
    return a.name < b.name;
  });
  return stats;
}

std::vector<SequenceRow> kernel_sequences(const Trace& trace, std::size_t length) {
  std::vector<SequenceRow> rows;
  if (length == 0) return rows;
  // Computation kernels by stream, in start order.
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < trace.device.size(); ++i)
    if (trace.device[i].kind != DeviceKind::kSync) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const DeviceEvent& x = trace.device[a];
    const DeviceEvent& y = trace.device[b];
    if (x.device != y.device) return x.device < y.device;
    if (x.stream != y.stream) return x.stream < y.stream;
    return x.start < y.start || (x.start == y.start && a < b);
  });
  struct Hash {
    std::size_t operator()(const std::vector<std::uint32_t>& key) const {
      std::size_t h = 1469598103934665603ull;
      for (const std::uint32_t v : key) h = (h ^ v) * 1099511628211ull;
      return h;
    }
  };
  std::unordered_map<std::vector<std::uint32_t>, std::size_t, Hash> index;
  std::vector<std::uint32_t> run;  // the current run of computation kernels on one stream
  std::vector<std::uint32_t> key(length);
  const auto same_stream = [&](std::uint32_t a, std::uint32_t b) {
    return trace.device[a].device == trace.device[b].device &&
           trace.device[a].stream == trace.device[b].stream;
  };
  for (std::size_t k = 0; k < order.size(); ++k) {
    const DeviceEvent& e = trace.device[order[k]];
    if (!run.empty() && !same_stream(run.back(), order[k])) run.clear();
    if (kernel_class(e) != KernelClass::kComputation || e.stream < 0) {
      run.clear();
      continue;
    }
    run.push_back(order[k]);
    if (run.size() < length) continue;
    const std::size_t first = run.size() - length;
    double kernels = 0, gaps = 0;
    for (std::size_t j = 0; j < length; ++j) {
      const DeviceEvent& x = trace.device[run[first + j]];
      key[j] = x.name;
      kernels += static_cast<double>(x.duration);
      if (j > 0)
        gaps += static_cast<double>(
            std::max<std::int64_t>(0, x.start - trace.device[run[first + j - 1]].end()));
    }
    // Looked up before inserting: a new key is the rare case, and emplace would copy it first.
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, rows.size()).first;
      rows.emplace_back();
    }
    SequenceRow& row = rows[it->second];
    ++row.count;
    row.kernel_time += kernels;
    row.gap_time += gaps;
    if (run.size() > 4 * length) run.erase(run.begin(), run.end() - static_cast<std::ptrdiff_t>(length));
  }
  for (const auto& [names, at] : index)
    for (const std::uint32_t name : names) rows[at].kernels.push_back(trace.name(name));
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [](const SequenceRow& r) { return r.count < 2; }),
             rows.end());
  std::sort(rows.begin(), rows.end(), [](const SequenceRow& a, const SequenceRow& b) {
    return a.total() > b.total() || (a.total() == b.total() && a.kernels < b.kernels);
  });
  return rows;
}

}  // namespace torchperf
