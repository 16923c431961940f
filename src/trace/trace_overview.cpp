#include "torchperf/trace/trace_overview.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "torchperf/trace/time_spans.h"
#include "torchperf/trace/device_summary.h"
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

double StepBreakdown::lag() const {
  return device.empty() ? 0 : static_cast<double>(device.end - end);
}

double StepBreakdown::utilization() const {
  const double d = duration();
  return d > 0 ? device_busy / d : 0;
}

double StepBreakdown::share(TimeCategory category) const {
  double sum = 0;
  for (double t : time) sum += t;
  return sum > 0 ? time[static_cast<std::size_t>(category)] / sum : 0;
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
  TimeSpans any_kernel;  // computation and communication kernels
};

CategorySets category_sets(const Trace& trace) {
  std::array<TimeSpans, kTimeCategories> raw;
  TimeSpans any_kernel;
  const auto put = [&](TimeCategory c, std::int64_t start, std::int64_t end, std::uint32_t i) {
    raw[static_cast<std::size_t>(c)].push_back({start, end, i});
  };
  for (std::uint32_t i = 0; i < trace.device.size(); ++i) {
    const DeviceEvent& e = trace.device[i];
    switch (e.kind) {
      case DeviceKind::kKernel:
        put(e.communication ? TimeCategory::kCommunication : TimeCategory::kKernel, e.start,
            e.end(), i);
        any_kernel.push_back({e.start, e.end(), i});
        break;
      case DeviceKind::kMemcpy:
        put(TimeCategory::kMemcpy, e.start, e.end(), i);
        break;
      case DeviceKind::kMemset:
        put(TimeCategory::kMemset, e.start, e.end(), i);
        break;
      case DeviceKind::kSync:  // a wait, not work
        break;
    }
  }
  for (std::uint32_t i = 0; i < trace.host.size(); ++i) {
    const HostEvent& e = trace.host[i];
    if (const auto category = host_category(e.kind)) put(*category, e.start, e.end(), i);
  }
  CategorySets sets;
  for (std::size_t c = 0; c < kTimeCategories; ++c)
    sets.category[c] = merge_spans(std::move(raw[c]));
  sets.any_kernel = merge_spans(std::move(any_kernel));
  return sets;
}

// Each device event (syncs excepted) in exactly one place: the step whose host range holds the
// start of the runtime call that launched it, or outside the steps. A trace without any runtime
// call (a device-only activity profile) gives each event to the step its own start falls in.
struct Attribution {
  std::vector<std::vector<std::uint32_t>> by_step;  // indices into Trace::device
  std::vector<std::uint32_t> outside;
  OutsideSteps where;
  bool by_device_start = false;
};

Attribution attribute(const Trace& trace, const LaunchIndex& launches) {
  Attribution a;
  const std::vector<Step>& steps = trace.steps;  // sorted by start
  a.by_step.resize(steps.size());
  a.by_device_start = launches.empty();
  // reach[k]: the latest end among steps 0..k, so that a step nested in or overlapping an
  // earlier, longer one does not hide it.
  std::vector<std::int64_t> reach(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k)
    reach[k] = std::max(steps[k].end, k > 0 ? reach[k - 1] : INT64_MIN);
  for (std::uint32_t i = 0; i < trace.device.size(); ++i) {
    const DeviceEvent& e = trace.device[i];
    if (e.kind == DeviceKind::kSync) continue;
    std::int64_t t = e.start;
    if (!a.by_device_start) {
      const HostEvent* launch = launches.find(e.correlation);
      if (launch == nullptr) {
        ++a.where.no_launch;
        a.outside.push_back(i);
        continue;
      }
      t = launch->start;
    }
    // The latest-starting step that holds t.
    const auto starting = static_cast<std::ptrdiff_t>(
        std::upper_bound(steps.begin(), steps.end(), t,
                         [](std::int64_t x, const Step& s) { return x < s.start; }) -
        steps.begin());
    std::ptrdiff_t held = -1;
    for (std::ptrdiff_t k = starting - 1; k >= 0 && reach[static_cast<std::size_t>(k)] > t; --k)
      if (t < steps[static_cast<std::size_t>(k)].end) {
        held = k;
        break;
      }
    if (held >= 0) {
      a.by_step[static_cast<std::size_t>(held)].push_back(i);
      continue;
    }
    a.outside.push_back(i);
    if (starting == 0) {
      ++a.where.before;
    } else if (starting == static_cast<std::ptrdiff_t>(steps.size())) {
      ++a.where.after;
    } else {
      ++a.where.between;
    }
  }
  return a;
}

void fill_categories(const CategorySets& sets, StepBreakdown& step) {
  TimeSpans covered;
  for (std::size_t c = 0; c < kTimeCategories; ++c) {
    if (static_cast<TimeCategory>(c) == TimeCategory::kOther) continue;
    const TimeSpans mine = clip(sets.category[c], step.start, step.end);
    step.time[c] = static_cast<double>(total_length(subtract(mine, covered)));
    covered = unite(covered, mine);
  }
  step.time[static_cast<std::size_t>(TimeCategory::kOther)] =
      step.duration() - static_cast<double>(total_length(covered));
  step.device_busy = static_cast<double>(total_length(clip(sets.any_kernel, step.start, step.end)));
}

// The mean of the steps' scalar device figures (streams are per step, not averaged).
DeviceSummary mean_device(const std::vector<StepBreakdown>& steps) {
  DeviceSummary m;
  const double n = static_cast<double>(steps.size());
  double kernels = 0, memcpys = 0, memsets = 0;
  for (const StepBreakdown& s : steps) {
    const DeviceSummary& d = s.device;
    kernels += static_cast<double>(d.kernels) / n;
    memcpys += static_cast<double>(d.memcpys) / n;
    memsets += static_cast<double>(d.memsets) / n;
    for (std::size_t c = 0; c < kKernelClasses; ++c) m.class_time[c] += d.class_time[c] / n;
    for (std::size_t c = 0; c < m.class_overlap.size(); ++c)
      m.class_overlap[c] += d.class_overlap[c] / n;
    m.busy += d.busy / n;
    m.compute += d.compute / n;
    m.non_compute += d.non_compute / n;
    m.idle += d.idle / n;
    m.host_wait += d.host_wait / n;
    m.kernel_wait += d.kernel_wait / n;
    m.other_wait += d.other_wait / n;
    m.communication += d.communication / n;
    m.overlapped_communication += d.overlapped_communication / n;
  }
  const auto round = [](double x) { return static_cast<std::uint64_t>(x + 0.5); };
  m.kernels = round(kernels);
  m.memcpys = round(memcpys);
  m.memsets = round(memsets);
  return m;
}

}  // namespace

TraceOverview overview(const Trace& trace) {
  TraceOverview result;
  const LaunchIndex launches(trace);
  const CategorySets sets = category_sets(trace);
  result.annotated_steps = !trace.steps.empty();
  result.has_device = !trace.device.empty();

  if (trace.steps.empty()) {
    StepBreakdown whole;
    whole.start = trace.first_ns;
    whole.end = trace.last_ns;
    std::vector<std::uint32_t> all;
    for (std::uint32_t i = 0; i < trace.device.size(); ++i) all.push_back(i);
    whole.device = summarize_device(trace, launches, all);
    result.device = whole.device;
    result.steps.push_back(std::move(whole));
  } else {
    Attribution a = attribute(trace, launches);
    std::vector<std::uint32_t> in_steps;
    for (std::size_t k = 0; k < trace.steps.size(); ++k) {
      StepBreakdown b;
      b.number = trace.steps[k].number;
      b.start = trace.steps[k].start;
      b.end = trace.steps[k].end;
      b.device = summarize_device(trace, launches, a.by_step[k]);
      in_steps.insert(in_steps.end(), a.by_step[k].begin(), a.by_step[k].end());
      result.steps.push_back(std::move(b));
    }
    result.device = summarize_device(trace, launches, in_steps);
    result.outside = summarize_device(trace, launches, a.outside);
    result.outside_where = a.where;
    result.by_device_start = a.by_device_start && !trace.device.empty();
  }
  for (StepBreakdown& step : result.steps) {
    step.has_device = result.has_device;
    fill_categories(sets, step);
  }

  StepBreakdown& mean = result.average;
  mean.has_device = result.has_device;
  const double n = static_cast<double>(result.steps.size());
  double duration = 0;
  for (const StepBreakdown& s : result.steps) {
    duration += s.duration() / n;
    for (std::size_t c = 0; c < kTimeCategories; ++c) mean.time[c] += s.time[c] / n;
    mean.device_busy += s.device_busy / n;
  }
  mean.start = 0;
  mean.device = mean_device(result.steps);
  // The mean lag is over the steps that launched device work (a lag is theirs alone); the mean
  // span, like every other figure, over all steps.
  double lag = 0, span = 0, launched = 0;
  for (const StepBreakdown& s : result.steps) {
    span += s.device.span() / n;
    if (s.device.empty()) continue;
    lag += s.lag();
    launched += 1;
  }
  if (launched > 0) lag /= launched;
  const auto round = [](double x) { return static_cast<std::int64_t>(std::llround(x)); };
  mean.end = round(duration);
  // The mean span and lag, kept through the mean device range: span() = end - start and
  // lag() = device.end - end.
  if (launched > 0) {
    mean.device.end = mean.end + round(lag);
    mean.device.start = mean.device.end - round(span);
  }
  return result;
}

}  // namespace torchperf
