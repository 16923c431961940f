// The oracle: Holistic Trace Analysis (the .venv's HolisticTraceAnalysis, run by
// scripts/hta_figures.py) on every trace in tests/data/traces (the copies of ../shared/traces),
// and torchperf's figures for the same traces. Counts agree exactly, times within 1%; where the
// two define a figure differently (docs/trace.md, "Agreement with HTA"), the test checks that the
// difference is that and nothing else.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/trace/trace_overview.h"
#include "torchperf/trace/trace_reader.h"
#include "torchperf/trace/trace_views.h"

namespace torchperf {
namespace {

struct Case {
  std::string file;
  nlohmann::json hta;
  Trace trace;
  TraceOverview overview;
};

std::vector<std::string> shared_traces() {
  std::vector<std::string> paths;
  const std::string dir = std::string(TORCHPERF_TEST_SOURCE_DIR) + "/tests/data/traces";
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (const std::string p = entry.path().string();
        (p.size() > 8 && p.compare(p.size() - 8, 8, ".json.gz") == 0) ||
        (p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0))
      paths.push_back(p);  // what hta_figures.py reads of a folder
  std::sort(paths.begin(), paths.end());
  return paths;
}

class HtaAgreement : public ::testing::Test {
 protected:
  // HTA's figures come from the ctest fixture fixtures.hta (once for every test), or from a
  // run here when the test runs alone.
  static void SetUpTestSuite() {
    const auto paths = shared_traces();
    const std::string figures = TORCHPERF_TEST_HTA_FIGURES;
    if (!std::filesystem::exists(figures)) {
      const testing::CliRun run = testing::run_shell(
          std::string(TORCHPERF_TEST_PYTHON) + " " + TORCHPERF_TEST_SOURCE_DIR +
          "/scripts/hta_figures.py --out " + figures + " " + TORCHPERF_TEST_SOURCE_DIR +
          "/tests/data/traces 2>&1");
      ASSERT_EQ(run.exit_code, 0) << "HTA (scripts/hta_figures.py) failed: " << run.out;
    }
    std::ifstream in(figures);
    const nlohmann::json all = nlohmann::json::parse(in);
    ASSERT_EQ(all.size(), paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i) {
      Case c;
      c.file = all[i].at("file").get<std::string>();
      ASSERT_EQ(c.file, std::filesystem::path(paths[i]).filename().string());
      c.hta = all[i];
      c.trace = read_trace(paths[i]);
      c.overview = overview(c.trace);
      cases().push_back(std::move(c));
    }
  }
  static std::vector<Case>& cases() {
    static std::vector<Case> all;
    return all;
  }
};

// Within 1% of HTA's figure (µs), or 1 µs for figures near zero.
void expect_close(double torchperf_ns, const nlohmann::json& hta_us, const std::string& what) {
  ASSERT_FALSE(hta_us.is_null()) << what;
  const double hta = hta_us.get<double>() * 1e3;
  EXPECT_NEAR(torchperf_ns, hta, std::max(0.01 * std::abs(hta), 1e3))
      << what << ": torchperf " << torchperf_ns * 1e-3 << " us, HTA " << hta * 1e-3 << " us";
}

std::uint64_t in_steps(const TraceOverview& o) {
  if (!o.annotated_steps) return o.device.events();
  std::uint64_t n = 0;
  for (const StepBreakdown& s : o.steps) n += s.device.events();
  return n;
}

TEST_F(HtaAgreement, CoversEverySharedTraceWithAndWithoutDeviceWork) {
  ASSERT_EQ(cases().size(), 7u);
  int with_device = 0;
  for (const Case& c : cases()) with_device += c.hta.at("device_events").get<int>() > 0;
  EXPECT_EQ(with_device, 6);
}

// tests/data/traces holds copies of ../shared/traces (the project's real GPU traces), so that a
// clone tests itself; where the shared folder is there, the copies are the same files.
TEST_F(HtaAgreement, TheTracesTestedAreTheSharedTraces) {
  const auto shared = std::filesystem::path(TORCHPERF_TEST_SOURCE_DIR) / ".." / "shared" / "traces";
  if (!std::filesystem::exists(shared)) GTEST_SKIP() << shared << " is not on this machine";
  std::size_t compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(shared)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 8 || name.compare(name.size() - 8, 8, ".json.gz") != 0) continue;
    const auto copy = std::filesystem::path(TORCHPERF_TEST_SOURCE_DIR) / "tests/data/traces" / name;
    ASSERT_TRUE(std::filesystem::exists(copy)) << name << " is not in tests/data/traces";
    std::ifstream a(entry.path(), std::ios::binary), b(copy, std::ios::binary);
    const std::string x((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
    const std::string y((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(x == y) << name << " differs from its copy";
    ++compared;
  }
  EXPECT_EQ(compared, cases().size());
}

TEST_F(HtaAgreement, StepCountsPlusOutsideStepsEqualTheFilesDeviceEvents) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    const auto events = c.hta.at("device_events").get<std::uint64_t>();
    EXPECT_EQ(in_steps(c.overview) + c.overview.outside.events(), events);
    EXPECT_EQ(c.overview.outside.events(), c.overview.outside_where.total());
  }
}

TEST_F(HtaAgreement, EachStepHoldsTheEventsHtaGivesItsIteration) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    std::map<std::int64_t, std::uint64_t> hta;
    for (const auto& [k, v] : c.hta.at("by_iteration").items()) hta[std::stoll(k)] = v;
    std::uint64_t hta_outside = hta.count(-1) ? hta[-1] : 0;
    // HTA gives GPU events an iteration only on streams numbered above 0: a HIP trace's
    // stream 0 keeps none. That is the whole difference, and torchperf puts them in steps.
    const auto unassigned = c.hta.value("no_iteration", 0ull);
    EXPECT_EQ(unassigned, c.hta.value("no_iteration_stream0", 0ull));
    if (!c.overview.annotated_steps) {
      EXPECT_EQ(hta_outside + unassigned, c.overview.device.events());
      continue;
    }
    std::uint64_t hta_steps = 0;
    for (const StepBreakdown& s : c.overview.steps) {
      if (unassigned == 0) {
        EXPECT_EQ(s.device.events(), hta.count(s.number) ? hta[s.number] : 0u)
            << "step " << s.number;
      }
      hta_steps += hta.count(s.number) ? hta[s.number] : 0;
    }
    EXPECT_EQ(in_steps(c.overview), hta_steps + unassigned);
    EXPECT_EQ(c.overview.outside.events(), hta_outside);
  }
}

TEST_F(HtaAgreement, HtasAnalysesReadTheStepsEventsPlusThoseLaunchedBeforeTheLastStepsEnd) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    if (!c.hta.contains("scoped_events")) continue;
    const OutsideSteps& w = c.overview.outside_where;
    // HTA keeps the events whose launch starts before the last step ends (and has a launch),
    // when the trace names two steps or more; torchperf's summary keeps those of the steps.
    const bool filtered = c.hta.at("step_names").get<int>() >= 2;
    EXPECT_EQ(c.hta.at("scoped_events").get<std::uint64_t>(),
              filtered ? c.overview.device.events() + w.before + w.between
                       : in_steps(c.overview) + c.overview.outside.events());
    // On the shared traces the two sets are the same, so every time below compares like with like.
    EXPECT_EQ(w.before + w.between, 0u);
  }
}

TEST_F(HtaAgreement, KernelTimePerClassAndPerOverlapOfClassesMatches) {
  const std::map<std::string, std::size_t> mask = {
      {"COMPUTATION", 1},
      {"COMMUNICATION", 2},
      {"COMPUTATION overlapping COMMUNICATION", 3},
      {"MEMORY", 4},
      {"COMPUTATION overlapping MEMORY", 5},
      {"COMMUNICATION overlapping MEMORY", 6},
      {"COMPUTATION overlapping COMMUNICATION overlapping MEMORY", 7}};
  int checked = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    if (!c.hta.contains("kernel_types")) continue;
    ++checked;
    std::set<std::size_t> seen;
    for (const auto& [label, us] : c.hta.at("kernel_types_ns").items()) {
      ASSERT_TRUE(mask.count(label)) << label;
      seen.insert(mask.at(label));
      expect_close(c.overview.device.class_overlap[mask.at(label)], us, label);
      // HTA's own breakdown cuts each stretch of time to whole microseconds (astype(int)):
      // it is short of the exact one by less than a microsecond a stretch, and no more.
      const double truncated = c.hta.at("kernel_types").value(label, 0.0);
      EXPECT_LE(truncated, us.get<double>() + 1e-6) << label;
      EXPECT_GE(truncated, us.get<double>() - c.hta.at("kernel_type_stretches").value(label, 0.0))
          << label;
    }
    for (std::size_t m = 1; m < 8; ++m)
      if (!seen.count(m)) {
        EXPECT_EQ(c.overview.device.class_overlap[m], 0) << m;
      }
  }
  EXPECT_EQ(checked, 6);  // every trace with device work
}

TEST_F(HtaAgreement, TemporalBreakdownMatchesWithSyncsAsTheOnlyDifference) {
  int checked = 0, with_syncs = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    if (!c.hta.contains("temporal")) continue;
    ++checked;
    const DeviceSummary& d = c.overview.device;
    const nlohmann::json& t = c.hta.at("temporal_without_syncs");
    expect_close(d.span(), t.at("kernel_time"), "span");
    expect_close(d.idle, t.at("idle"), "idle");
    expect_close(d.compute, t.at("compute"), "compute");
    expect_close(d.non_compute, t.at("non_compute"), "non-compute");
    // HTA's own breakdown counts cuda_sync waits as busy: where the trace has none in scope,
    // it is the same breakdown.
    bool syncs = false;
    for (const DeviceEvent& e : c.trace.device) syncs = syncs || e.kind == DeviceKind::kSync;
    const nlohmann::json& with = c.hta.at("temporal");
    if (!syncs) {
      EXPECT_EQ(with, t);
    } else {  // the syncs add busy time, and may widen the span
      ++with_syncs;
      EXPECT_GE(with.at("kernel_time").get<double>(), t.at("kernel_time").get<double>());
      EXPECT_GE(with.at("kernel_time").get<double>() - with.at("idle").get<double>(),
                t.at("kernel_time").get<double>() - t.at("idle").get<double>());
    }
  }
  EXPECT_EQ(checked, 6);
  EXPECT_EQ(with_syncs, 1);  // AlexNet's
}

TEST_F(HtaAgreement, IdleTimeCausesMatchStreamByStream) {
  int streams_checked = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    if (!c.hta.contains("idle_causes")) continue;
    streams_checked += static_cast<int>(c.hta.at("idle_causes").size());
    const auto& streams = c.overview.device.streams;
    EXPECT_EQ(streams.size(), c.hta.at("idle_causes").size());
    for (const auto& [key, causes] : c.hta.at("idle_causes").items()) {
      const int stream = std::stoi(key);
      const auto it = std::find_if(streams.begin(), streams.end(),
                                   [&](const StreamSummary& s) { return s.stream == stream; });
      ASSERT_NE(it, streams.end()) << "stream " << key;
      expect_close(it->host_wait, causes.value("host_wait", nlohmann::json(0.0)), "host wait " + key);
      expect_close(it->kernel_wait, causes.value("kernel_wait", nlohmann::json(0.0)), "kernel wait " + key);
      expect_close(it->other_wait, causes.value("other", nlohmann::json(0.0)), "other " + key);
    }
  }
  EXPECT_GE(streams_checked, 12);
}

TEST_F(HtaAgreement, CommunicationOverlapMatches) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    if (!c.hta.contains("overlap_pct")) continue;
    const double ours = c.overview.device.overlap();
    if (c.hta.at("overlap_pct").is_null()) {
      EXPECT_EQ(ours, -1);
    } else {
      // HTA rounds to 0.01 percentage points.
      EXPECT_NEAR(100 * ours, c.hta.at("overlap_pct").get<double>(),
                  std::max(0.005 + 1e-9, 0.01 * c.hta.at("overlap_pct").get<double>()));
    }
  }
}

TEST_F(HtaAgreement, LaunchQueueLengthMatchesPerStream) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    if (!c.hta.contains("queue_length")) continue;
    for (const auto& [key, q] : c.hta.at("queue_length").items()) {
      const int stream = std::stoi(key);
      const auto& streams = c.overview.device.streams;
      const auto it = std::find_if(streams.begin(), streams.end(),
                                   [&](const StreamSummary& s) { return s.stream == stream; });
      ASSERT_NE(it, streams.end()) << "stream " << key;
      EXPECT_EQ(static_cast<double>(it->max_queue), q.at("max").get<double>()) << key;
      EXPECT_NEAR(it->mean_queue_over_changes, q.at("mean").get<double>(),
                  0.01 * q.at("mean").get<double>())
          << key;
    }
  }
}

TEST_F(HtaAgreement, LaunchStatisticsMatchWithHipLaunchesAsTheOnlyDifference) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    if (!c.hta.contains("launch_stats")) continue;
    const LaunchStats ours = launch_stats(c.trace);
    const nlohmann::json& hta = c.hta.at("launch_stats");
    // HTA's launch statistics know two launch calls, cudaLaunchKernel and cudaLaunchKernelExC
    // (its queue knows the HIP ones too): kernels launched by the driver's cuLaunchKernel
    // (Triton's) or by hipLaunchKernel are missing from its figures, and no others.
    const LaunchIndex launches(c.trace);
    std::uint64_t others = 0;
    for (const DeviceEvent& e : c.trace.device) {
      const HostEvent* call = e.kind == DeviceKind::kKernel ? launches.find(e.correlation) : nullptr;
      if (call == nullptr || !launches.enqueues(*call)) continue;
      const std::string& name = c.trace.name(call->name);
      if (name != "cudaLaunchKernel" && name != "cudaLaunchKernelExC") ++others;
    }
    EXPECT_EQ(ours.matched, hta.at("matched").get<std::uint64_t>() + others);
    if (others > 0) continue;
    EXPECT_EQ(ours.short_kernels, hta.at("short").get<std::uint64_t>());
    EXPECT_EQ(ours.runtime_outliers, hta.at("runtime_outliers").get<std::uint64_t>());
    EXPECT_EQ(ours.delay_outliers, hta.at("delay_outliers").get<std::uint64_t>());
    // For an even count torchperf's median is the upper middle value, pandas' the mean of the
    // two.
    expect_close(ours.launch.median, hta.at("launch_median"), "launch median");
    expect_close(ours.gpu.median, hta.at("kernel_median"), "kernel median");
    expect_close(ours.delay.median, hta.at("delay_median"), "delay median");
  }
}

}  // namespace
}  // namespace torchperf
