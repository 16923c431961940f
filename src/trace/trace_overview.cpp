#include "torchperf/trace/trace_overview.h"

#include <algorithm>
#include <optional>

#include "torchperf/trace/time_spans.h"
#include "torchperf/trace/launch_index.h"

namespace torchperf {

const char* category_name(TimeCategory category) {
  static const char* kNames[] = {"kernel",  "communication", "memcpy",   "memset",
                                 "runtime", "data loader",   "CPU exec", "other"};
  return kNames[static_cast<std::size_t>(category)];
}

const char* category_key(TimeCategory category) {
  static const char* kKeys[] = {"kernel",  "communication", "memcpy",   "memset",
                                "runtime", "data_loader",   "cpu_exec", "other"};
  return kKeys[static_cast<std::size_t>(category)];
}

double StepBreakdown::duration() const { return static_cast<double>(end - start); }

double StepBreakdown::utilization() const {
  const double d = duration();
  return d > 0 ? device_busy / d : 0;
}

double StepBreakdown::share(TimeCategory category) const {
  double sum = 0;
  for (double t : time) sum += t;
  return sum > 0 ? time[static_cast<std::size_t>(category)] / sum : 0;
}

double TraceOverview::overlap() const {
  return communication > 0 ? overlapped_communication / communication : -1;
}

namespace {

// The category of a host event's own time; an annotation is a range around other work.
std::optional<TimeCategory> host_category(HostKind kind) {
  switch (kind) {
    case HostKind::kRuntime:
      return TimeCategory::kRuntime;
    case HostKind::kDataLoader:
      return TimeCategory::kDataLoader;
    case HostKind::kOperator:
      return TimeCategory::kCpuExec;
    case HostKind::kCommunication:
      return TimeCategory::kCommunication;
    case HostKind::kCopy:
      return TimeCategory::kMemcpy;
    case HostKind::kAnnotation:
      break;
  }
  return std::nullopt;
}

// The trace's events as unions, one per category, built once and clipped per step.
struct CategorySets {
  std::array<TimeSpans, kTimeCategories> category;
  TimeSpans any_kernel;          // computation and communication kernels
  TimeSpans device_busy;         // kernels, copies and sets; `first` indexes Trace::device
  TimeSpans device_non_compute;  // communication kernels, copies, sets
};

CategorySets category_sets(const Trace& trace) {
  std::array<TimeSpans, kTimeCategories> raw;
  TimeSpans any_kernel, busy, non_compute;
  const auto put = [&](TimeCategory c, std::int64_t start, std::int64_t end, std::uint32_t i) {
    raw[static_cast<std::size_t>(c)].push_back({start, end, i});
  };
  for (std::uint32_t i = 0; i < trace.device.size(); ++i) {
    const DeviceEvent& e = trace.device[i];
    const TimeSpan interval{e.start, e.end(), i};
    switch (e.kind) {
      case DeviceKind::kKernel:
        put(e.communication ? TimeCategory::kCommunication : TimeCategory::kKernel, e.start,
            e.end(), i);
        any_kernel.push_back(interval);
        if (e.communication) non_compute.push_back(interval);
        break;
      case DeviceKind::kMemcpy:
        put(TimeCategory::kMemcpy, e.start, e.end(), i);
        non_compute.push_back(interval);
        break;
      case DeviceKind::kMemset:
        put(TimeCategory::kMemset, e.start, e.end(), i);
        non_compute.push_back(interval);
        break;
      case DeviceKind::kSync:  // a wait, not work
        continue;
    }
    busy.push_back(interval);
  }
  for (std::uint32_t i = 0; i < trace.host.size(); ++i) {
    const HostEvent& e = trace.host[i];
    if (const auto category = host_category(e.kind)) put(*category, e.start, e.end(), i);
  }
  CategorySets sets;
  for (std::size_t c = 0; c < kTimeCategories; ++c)
    sets.category[c] = merge_spans(std::move(raw[c]));
  sets.any_kernel = merge_spans(std::move(any_kernel));
  sets.device_busy = merge_spans(std::move(busy));
  sets.device_non_compute = merge_spans(std::move(non_compute));
  return sets;
}

// Each step's window: its host range, extended to the end of the device work its host range
// launched (found through the correlation ids).
std::vector<StepBreakdown> windows(const Trace& trace, const LaunchIndex& launches) {
  std::vector<StepBreakdown> steps;
  if (trace.steps.empty()) {
    StepBreakdown whole;
    whole.start = trace.first_ns;
    whole.end = trace.last_ns;
    steps.push_back(whole);
    return steps;
  }
  for (const Step& s : trace.steps) {
    StepBreakdown b;
    b.number = s.number;
    b.start = s.start;
    b.end = s.end;
    steps.push_back(b);
  }
  for (const DeviceEvent& e : trace.device) {
    if (e.kind == DeviceKind::kSync) continue;  // a wait, not work the step launched
    const HostEvent* launch = launches.find(e.correlation);
    if (launch == nullptr) continue;
    auto it = std::upper_bound(trace.steps.begin(), trace.steps.end(), launch->start,
                               [](std::int64_t t, const Step& s) { return t < s.start; });
    if (it == trace.steps.begin()) continue;
    --it;
    if (launch->start >= it->end) continue;
    auto& window = steps[static_cast<std::size_t>(it - trace.steps.begin())];
    window.end = std::max(window.end, e.end());
  }
  return steps;
}

// Why the device was idle in [from, to): the event that ended the gap (or none) and its launch.
void attribute_gap(const Trace& trace, const LaunchIndex& launches, std::int64_t from,
                   std::int64_t to, const TimeSpan* next, StepBreakdown& step) {
  const double gap = static_cast<double>(to - from);
  if (gap <= 0) return;
  if (next == nullptr) {  // nothing more was queued: the host had not sent it
    step.host_wait += gap;
    return;
  }
  const HostEvent* launch = launches.find(trace.device[next->first].correlation);
  if (launch == nullptr) {
    step.other_wait += gap;
  } else if (launch->end() > from) {
    step.host_wait += gap;
  } else if (to - from <= kKernelWaitGapNs) {
    step.kernel_wait += gap;
  } else {
    step.other_wait += gap;
  }
}

void fill_step(const Trace& trace, const LaunchIndex& launches, const CategorySets& sets,
               const std::vector<std::int64_t>& kernel_starts, StepBreakdown& step) {
  TimeSpans covered;
  for (std::size_t c = 0; c < kTimeCategories; ++c) {
    if (static_cast<TimeCategory>(c) == TimeCategory::kOther) continue;
    const TimeSpans mine = clip(sets.category[c], step.start, step.end);
    step.time[c] = static_cast<double>(total_length(subtract(mine, covered)));
    covered = unite(covered, mine);
  }
  step.time[static_cast<std::size_t>(TimeCategory::kOther)] =
      step.duration() - static_cast<double>(total_length(covered));
  step.has_device = !trace.device.empty();
  if (!step.has_device) return;
  const TimeSpans busy = clip(sets.device_busy, step.start, step.end);
  const TimeSpans compute = clip(sets.category[0], step.start, step.end);
  step.device_busy = static_cast<double>(total_length(clip(sets.any_kernel, step.start, step.end)));
  step.compute = static_cast<double>(total_length(compute));
  step.non_compute = static_cast<double>(
      total_length(subtract(clip(sets.device_non_compute, step.start, step.end), compute)));
  step.idle = step.duration() - static_cast<double>(total_length(busy));
  std::int64_t at = step.start;
  for (const TimeSpan& i : busy) {
    attribute_gap(trace, launches, at, i.start, &i, step);
    at = i.end;
  }
  // The gap at the end of the window: ended by the next device work, if any.
  // Work starting exactly at the window's end is what ended the gap.
  const auto next = std::lower_bound(sets.device_busy.begin(), sets.device_busy.end(), step.end,
                                     [](const TimeSpan& i, std::int64_t t) { return i.start < t; });
  attribute_gap(trace, launches, at, step.end, next == sets.device_busy.end() ? nullptr : &*next,
                step);
  step.kernels = static_cast<std::uint64_t>(
      std::lower_bound(kernel_starts.begin(), kernel_starts.end(), step.end) -
      std::lower_bound(kernel_starts.begin(), kernel_starts.end(), step.start));
}

}  // namespace

TraceOverview overview(const Trace& trace) {
  TraceOverview result;
  const LaunchIndex launches(trace);
  const CategorySets sets = category_sets(trace);
  std::vector<std::int64_t> kernel_starts;
  for (const DeviceEvent& e : trace.device)
    if (e.kind == DeviceKind::kKernel) kernel_starts.push_back(e.start);
  std::sort(kernel_starts.begin(), kernel_starts.end());

  result.annotated_steps = !trace.steps.empty();
  result.has_device = !trace.device.empty();
  result.steps = windows(trace, launches);
  for (StepBreakdown& step : result.steps) fill_step(trace, launches, sets, kernel_starts, step);

  StepBreakdown& mean = result.average;
  mean.has_device = result.has_device;
  const double n = static_cast<double>(result.steps.size());
  double duration = 0;
  for (const StepBreakdown& s : result.steps) {
    duration += s.duration() / n;
    for (std::size_t c = 0; c < kTimeCategories; ++c) mean.time[c] += s.time[c] / n;
    mean.device_busy += s.device_busy / n;
    mean.compute += s.compute / n;
    mean.non_compute += s.non_compute / n;
    mean.idle += s.idle / n;
    mean.host_wait += s.host_wait / n;
    mean.kernel_wait += s.kernel_wait / n;
    mean.other_wait += s.other_wait / n;
    mean.kernels += s.kernels;
  }
  mean.kernels = static_cast<std::uint64_t>(static_cast<double>(mean.kernels) / n + 0.5);
  mean.start = 0;
  mean.end = static_cast<std::int64_t>(duration + 0.5);

  const TimeSpans communication = merge_spans([&] {
    TimeSpans c;
    for (std::uint32_t i = 0; i < trace.device.size(); ++i)
      if (trace.device[i].kind == DeviceKind::kKernel && trace.device[i].communication)
        c.push_back({trace.device[i].start, trace.device[i].end(), i});
    return c;
  }());
  result.communication = static_cast<double>(total_length(communication));
  result.overlapped_communication =
      static_cast<double>(intersection_length(communication, sets.category[0]));
  return result;
}

}  // namespace torchperf
