#include "torchperf/train/chrome_trace.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "torchperf/error.h"
#include "torchperf/train/training_session.h"

namespace torchperf {
namespace {

namespace profiler = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// The phases in the order a step runs them (the loss read, `other`, sits before backward); a
// TorchScript step has no all-reduce (DDP's, in the Python step).
constexpr Phase kRunOrder[] = {Phase::kDataWait, Phase::kCopy,     Phase::kForward,
                               Phase::kOther,    Phase::kBackward, Phase::kOptimizer};

// The schedule's steps under the session's settings, the profiler on for warm-up and active.
struct Profiled {
  std::vector<StepTimes> active;
  std::unique_ptr<profiler::ProfilerResult> result;
};

Profiled run_profiled(TrainingSession& session, const TraceSchedule& schedule) {
  const ScopeExit restore(session.enter());
  for (std::size_t i = 0; i < schedule.wait; ++i) session.step(true);
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO, /*report_input_shapes=*/true,
                                    /*profile_memory=*/false);
  std::set<impl::ActivityType> activities{impl::ActivityType::CPU};
  if (session.on_cuda()) activities.insert(impl::ActivityType::CUDA);  // kernels too
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  Profiled p;
  try {
    for (std::size_t i = 0; i < schedule.warmup; ++i) session.step(true);
    for (std::size_t i = 0; i < schedule.active; ++i) p.active.push_back(session.step(true));
  } catch (...) {
    profiler::disableProfiler();
    throw;
  }
  p.result = profiler::disableProfiler();
  return p;
}

}  // namespace

TraceSummary write_trace(TrainingSession& session, const TraceSchedule& schedule,
                         const std::string& path) {
  std::error_code ec;
  const auto folder = std::filesystem::path(path).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder, ec);
  std::ofstream out(path);
  if (!out) throw UsageError("--trace '" + path + "': cannot write the file");
  const Profiled profiled = run_profiled(session, schedule);
  const std::vector<StepTimes>& active = profiled.active;
  const std::int64_t active_start_us =
      active.empty() ? std::numeric_limits<std::int64_t>::max() : active.front().start_us;
  TraceSummary summary;
  nlohmann::json events = nlohmann::json::array();
  constexpr int kPid = 1;
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", kPid},
                    {"args", {{"name", "torchperf train"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", kPid}, {"tid", 0},
                    {"args", {{"name", "training step (phases)"}}}});
  const std::size_t first = session.steps_done() - active.size() + 1;
  for (std::size_t i = 0; i < active.size(); ++i) {
    const StepTimes& t = active[i];
    events.push_back({{"ph", "X"}, {"name", "step " + std::to_string(first + i)},
                      {"cat", "step"}, {"pid", kPid}, {"tid", 0}, {"ts", t.start_us},
                      {"dur", t.total_ns / 1000.0},
                      {"args", {{"samples", t.samples}, {"loss", t.loss}}}});
    double at = static_cast<double>(t.start_us);
    for (const Phase p : kRunOrder) {
      const double dur = t.ns[static_cast<std::size_t>(p)] / 1000.0;
      events.push_back({{"ph", "X"}, {"name", phase_name(p)}, {"cat", "phase"}, {"pid", kPid},
                        {"tid", 0}, {"ts", at}, {"dur", dur}});
      at += dur;
      ++summary.phase_events;
    }
  }
  std::map<std::uint64_t, int> threads;  // profiler thread ids as small rows after the phases
  for (const auto& e : profiled.result->events()) {
    if (static_cast<std::int64_t>(e.startNs() / 1000) < active_start_us) continue;  // warm-up
    const auto [it, fresh] =
        threads.emplace(e.startThreadId(), static_cast<int>(threads.size()) + 1);
    if (fresh)
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", kPid}, {"tid", it->second},
                        {"args", {{"name", "operators, thread " + std::to_string(it->second)}}}});
    nlohmann::json args = nlohmann::json::object();
    if (e.hasShapes() && !e.shapes().empty()) args["input shapes"] = e.shapes().vec();
    events.push_back({{"ph", "X"}, {"name", e.name()},
                      {"cat", e.deviceType() == c10::DeviceType::CUDA ? "kernel" : "cpu_op"},
                      {"pid", kPid}, {"tid", it->second},
                      {"ts", static_cast<std::int64_t>(e.startNs() / 1000)},
                      {"dur", static_cast<std::int64_t>(e.durationNs() / 1000)}, {"args", args}});
    ++summary.operator_events;
  }
  summary.steps = active.size();
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"},
                        {"otherData", {{"producer", "torchperf train --trace"},
                                       {"schedule", {{"wait", schedule.wait},
                                                     {"warmup", schedule.warmup},
                                                     {"active", schedule.active}}}}}}
             .dump();
  if (!out) throw UsageError("--trace '" + path + "': writing the file failed");
  return summary;
}

}  // namespace torchperf
