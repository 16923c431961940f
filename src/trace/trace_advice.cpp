#include "torchperf/trace/trace_advice.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include <fmt/format.h>
#include "torchperf/page/text_table.h"

namespace torchperf {
namespace {

std::string ms(double ns) { return fmt::format("{:.2f} ms", ns * 1e-6); }

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

bool reduced_precision_kernel(const std::string& name) {
  const std::string n = lower(name);
  for (const char* marker : {"bf16", "bfloat16", "f16", "fp16", "half", "hmma", "h884", "h1688",
                             "h16816", "fp8", "e4m3"})
    if (has(n, marker)) return true;
  return false;
}

bool synchronising_call(const std::string& name) {
  return name == "aten::item" || name == "aten::_local_scalar_dense" ||
         has(name, "StreamSynchronize") || has(name, "DeviceSynchronize") ||
         has(name, "EventSynchronize") || name == "cudaMemcpy" || name == "hipMemcpy";
}

namespace {

// What every rule reads: the trace, its overview, the average step, and how many steps (or
// the whole trace, where no step is annotated) the figures are per.
struct TraceFacts {
  const Trace& trace;
  const TraceOverview& o;
  const std::vector<KernelRow>& kernels;
  const LaunchStats& launches;
  const StepBreakdown& step;
  double steps;
  std::string per_step;
};

// Batches that keep the step waiting.
void advise_data_wait(const TraceFacts& f, std::vector<Advice>& out) {
  const StepBreakdown& step = f.step;
  const std::string& per_step = f.per_step;
  const double data = step.share(TimeCategory::kDataLoader);
  if (data > kDataWaitThreshold)
    out.push_back({"data-wait",
                   "load batches ahead of the step: DataLoader(num_workers=N, prefetch_factor, "
                   "persistent_workers=True)",
                   fmt::format("the data loader is {} of the {} {} (threshold {})", percent(data),
                               ms(step.duration()), per_step, percent(kDataWaitThreshold)),
                   "workers", "more", false, data});
}

// Host-to-device copies: from pageable memory they cannot overlap; exposed, they cost steps.
void advise_copies(const TraceFacts& f, std::vector<Advice>& out) {
  const Trace& trace = f.trace;
  const StepBreakdown& step = f.step;
  const double steps = f.steps;
  const std::string& per_step = f.per_step;
  double pageable_bytes = 0, pageable_count = 0, pageable_time = 0;
  for (const DeviceEvent& e : trace.device)
    if (e.kind == DeviceKind::kMemcpy && e.copy == CopyKind::kHostToDevicePageable) {
      pageable_bytes += static_cast<double>(e.bytes);
      pageable_count += 1;
      pageable_time += static_cast<double>(e.duration);
    }
  const double copy = step.share(TimeCategory::kMemcpy);
  const double pageable_share = step.duration() > 0 ? pageable_time / steps / step.duration() : 0;
  if (pageable_share <= kPageableCopyThreshold) pageable_count = 0;
  if (pageable_count > 0 || copy > kCopyThreshold) {
    std::string evidence = fmt::format("exposed copies are {} of the {} (threshold {})", percent(copy),
                                       per_step, percent(kCopyThreshold));
    if (pageable_count > 0)
      evidence += fmt::format(
          "; {:.0f} host-to-device copies per {} come from pageable memory "
          "({:.1f} MB, {} of the {}; threshold {})",
          pageable_count / steps, per_step, pageable_bytes / steps / 1e6, percent(pageable_share),
          per_step, percent(kPageableCopyThreshold));
    if (pageable_count > 0)
      out.push_back({"copy",
                     "copy from pinned memory without waiting: DataLoader(pin_memory=True) and "
                     "tensor.to(device, non_blocking=True)",
                     evidence, "pin_memory", "on", false, std::max(copy, pageable_share)});
    else
      out.push_back({"copy", "overlap the copies with compute: non_blocking=True on a side stream",
                     evidence, "non_blocking", "on", false, copy});
  }
}

// A device idle for part of the step, and kernels shorter than their launches.
void advise_utilisation(const TraceFacts& f, std::vector<Advice>& out) {
  const TraceOverview& o = f.o;
  const LaunchStats& launches = f.launches;
  const StepBreakdown& step = f.step;
  const std::string& per_step = f.per_step;
  if (o.has_device && step.utilization() < kTraceUtilisationThreshold) {
    const DeviceSummary& d = step.device;
    const double idle = std::max(1.0, d.host_wait + d.kernel_wait + d.other_wait);
    const double host = d.host_wait / idle;
    std::string message =
        host >= 0.5 ? "the device waits for the host: a larger batch, fewer and larger operators "
                      "(torch.compile, CUDA graphs), less Python in the step"
                    : "the device is idle between kernels that were queued in time: look for "
                      "synchronisation between streams and for waits on events";
    out.push_back({"utilisation", message,
                   fmt::format("the device computes {} of the {} (threshold {}); of the {} of "
                               "gaps on its streams, host wait {}, kernel wait {}, other {}",
                               percent(step.utilization()), per_step, percent(kTraceUtilisationThreshold),
                               ms(idle), percent(d.host_wait / idle), percent(d.kernel_wait / idle),
                               percent(d.other_wait / idle)),
                   host >= 0.5 ? "batch" : "", host >= 0.5 ? "larger" : "", host >= 0.5,
                   1.0 - step.utilization()});
  }

  if (launches.matched > 0) {
    const double short_share =
        static_cast<double>(launches.short_kernels) / static_cast<double>(launches.matched);
    if (short_share > kShortKernelThreshold)
      out.push_back({"short-kernels",
                     "fuse small kernels: torch.compile, CUDA graphs, or fused optimizers "
                     "(foreach/fused=True)",
                     fmt::format("{} of {} kernels run shorter on the device than their launch "
                                 "on the host (threshold {}); median launch {:.1f} us, median "
                                 "kernel {:.1f} us",
                                 percent(short_share), launches.matched, percent(kShortKernelThreshold),
                                 launches.launch.median * 1e-3, launches.gpu.median * 1e-3),
                     "", "", false, short_share * (1.0 - step.utilization())});
  }
}

// A full launch queue: the host runs ahead until its launch calls block, so the step is the
// device's time and nothing on the host side would shorten it.
void advise_device_bound(const TraceFacts& f, std::vector<Advice>& out) {
  const TraceOverview& o = f.o;
  const LaunchStats& launches = f.launches;
  const StepBreakdown& step = f.step;
  const StreamSummary* fullest = nullptr;
  for (const StreamSummary& s : o.device.streams)
    if (fullest == nullptr || s.max_queue > fullest->max_queue) fullest = &s;
  if (fullest != nullptr && static_cast<double>(fullest->max_queue) >=
                                kFullQueueThreshold * static_cast<double>(kLaunchQueueLimit)) {
    std::string evidence = fmt::format(
        "stream {}/{}'s launch queue reaches {} of {} (threshold {}); {} launch calls take "
        "over {:.0f} us",
        fullest->device, fullest->stream, fullest->max_queue, kLaunchQueueLimit, percent(kFullQueueThreshold),
        launches.runtime_outliers, kRuntimeOutlierNs * 1e-3);
    if (o.annotated_steps && !step.device.empty())
      evidence += fmt::format("; the device finishes a step {} after the host", ms(step.lag()));
    out.push_back({"device-bound",
                   "the device is the bottleneck: the host fills the launch queue and waits, so "
                   "its work (Python, data, launches) is already hidden; make the kernels "
                   "faster (reduced precision, channels_last, torch.compile)",
                   evidence, "", "", false, step.share(TimeCategory::kKernel)});
  }
}

// Synchronising calls inside the steps.
void advise_sync(const TraceFacts& f, std::vector<Advice>& out) {
  const Trace& trace = f.trace;
  const TraceOverview& o = f.o;
  const StepBreakdown& step = f.step;
  const double steps = f.steps;
  const std::string& per_step = f.per_step;
  double sync_time = 0, sync_calls = 0;
  std::string sync_names;
  std::vector<std::pair<double, std::string>> by_name;
  {
    // The outermost synchronising call counts, once: aten::item contains _local_scalar_dense,
    // which contains the copy and the stream synchronisation.
    std::vector<const HostEvent*> calls;
    for (const HostEvent& e : trace.host) {
      if (e.kind != HostKind::kRuntime && e.kind != HostKind::kOperator) continue;
      if (!synchronising_call(trace.name(e.name))) continue;
      if (o.annotated_steps) {
        const auto inside = std::any_of(
            o.steps.begin(), o.steps.end(),
            [&](const StepBreakdown& s) { return e.start >= s.start && e.start < s.end; });
        if (!inside) continue;
      }
      calls.push_back(&e);
    }
    std::sort(calls.begin(), calls.end(), [](const HostEvent* a, const HostEvent* b) {
      if (a->thread != b->thread) return a->thread < b->thread;
      if (a->start != b->start) return a->start < b->start;
      if (a->duration != b->duration) return a->duration > b->duration;
      return a < b;  // file order: the caller is written first
    });
    std::unordered_map<std::uint32_t, std::pair<double, double>> acc;
    const HostEvent* outer = nullptr;
    for (const HostEvent* e : calls) {
      if (outer != nullptr && outer->thread == e->thread && e->start < outer->end()) continue;
      outer = e;
      auto& a = acc[e->name];
      a.first += static_cast<double>(e->duration);
      a.second += 1;
    }
    for (const auto& [name, a] : acc) {
      sync_time += a.first;
      sync_calls += a.second;
      by_name.push_back({a.second, trace.name(name)});
    }
    std::sort(by_name.rbegin(), by_name.rend());
    for (std::size_t i = 0; i < by_name.size() && i < 3; ++i)
      sync_names +=
          (i > 0 ? ", " : "") + by_name[i].second + fmt::format(" x{:.0f}", by_name[i].first);
  }
  const double sync_share = step.duration() > 0 ? sync_time / steps / step.duration() : 0;
  if (sync_calls > 0 && sync_share > kSyncThreshold)
    out.push_back({"sync",
                   "avoid host-device synchronisation inside the step: no .item(), .cpu(), "
                   "print of device tensors or explicit synchronize; keep values on the device",
                   fmt::format("{:.1f} synchronising calls per {} take {} of it (threshold {}): {}",
                               sync_calls / steps, per_step, percent(sync_share), percent(kSyncThreshold),
                               sync_names),
                   "", "", false, sync_share});
}

// Communication the computation does not hide.
void advise_communication(const TraceFacts& f, std::vector<Advice>& out) {
  const TraceOverview& o = f.o;
  const StepBreakdown& step = f.step;
  const std::string& per_step = f.per_step;
  const double exposed = step.share(TimeCategory::kCommunication);
  if (exposed > kCommunicationThreshold) {
    std::string evidence = fmt::format(
        "communication not hidden by computation is {} of the {} "
        "(threshold {})",
        percent(exposed), per_step, percent(kCommunicationThreshold));
    if (o.overlap() >= 0)
      evidence +=
          fmt::format("; {} of communication kernel time overlaps computation", percent(o.overlap()));
    out.push_back({"communication",
                   "overlap communication with the backward pass: DDP's bucket_cap_mb, "
                   "gradient accumulation with no_sync(), or fewer, larger all-reduces",
                   evidence, "", "", false, exposed});
  }
}

// Reduced precision on hardware with tensor (matrix) cores.
void advise_reduced_precision(const TraceFacts& f, std::vector<Advice>& out) {
  const Trace& trace = f.trace;
  const std::vector<KernelRow>& kernels = f.kernels;
  const StepBreakdown& step = f.step;
  const std::string& per_step = f.per_step;
  const auto device = std::find_if(trace.devices.begin(), trace.devices.end(),
                                   [](const DeviceInfo& d) { return d.has_matrix_units(); });
  double computation = 0, reduced = 0;
  for (const KernelRow& k : kernels) {
    if (k.kind != KernelClass::kComputation) continue;
    computation += k.total;
    if (reduced_precision_kernel(k.name)) reduced += k.total;
  }
  if (device != trace.devices.end() && computation > 0 &&
      reduced / computation < kReducedPrecisionThreshold) {
    const double kernel_share = step.share(TimeCategory::kKernel);
    out.push_back({"reduced-precision",
                   "compute in bf16 or fp16 with autocast (torch.autocast, and a GradScaler for "
                   "fp16): the matrix units run 16-bit types several times faster",
                   fmt::format("{} of kernel time is in fp16/bf16 kernels (threshold {}) on {} "
                               "(compute {}.{}, with {} cores); kernels are {} of the {}",
                               percent(reduced / computation), percent(kReducedPrecisionThreshold),
                               device->name, device->compute_major, device->compute_minor,
                               device->amd() ? "matrix" : "tensor", percent(kernel_share), per_step),
                   "amp", device->amd() ? "bf16" : "fp16", true, kernel_share});
  }
}
}  // namespace

std::vector<Advice> advise_trace(const Trace& trace, const TraceOverview& o,
                                 const std::vector<KernelRow>& kernels,
                                 const LaunchStats& launches) {
  const TraceFacts f{trace, o, kernels, launches, o.average,
                     std::max<double>(1, static_cast<double>(o.steps.size())),
                     o.annotated_steps ? "step" : "trace"};
  std::vector<Advice> out;
  advise_data_wait(f, out);
  advise_copies(f, out);
  advise_utilisation(f, out);
  advise_device_bound(f, out);
  advise_sync(f, out);
  advise_communication(f, out);
  advise_reduced_precision(f, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const Advice& a, const Advice& b) { return a.weight > b.weight; });
  return out;
}

}  // namespace torchperf
