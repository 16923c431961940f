#include "torchperf/trace/trace_overview.h"

#include <gtest/gtest.h>

#include "support/trace_text.h"
#include "test_paths.h"
#include "torchperf/trace/time_spans.h"
#include "torchperf/trace/trace_reader.h"

namespace torchperf {
namespace {

using testing::TraceText;

double category_us(const StepBreakdown& s, TimeCategory c) {
  return s.time[static_cast<std::size_t>(c)] * 1e-3;
}

// One step of 100 µs around add_six_device_events, with a forward and a data-loader call.
TraceText one_step() {
  TraceText t;
  t.device().step(1, 0, 100).op("aten::forward", 0, 90);
  testing::add_six_device_events(t).op(
      "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 96, 3);
  return t;
}

TEST(Intervals, UnionDifferenceAndClippingAreExact) {
  const TimeSpans a = merge_spans({{0, 10}, {5, 15}, {20, 30}, {30, 31}, {40, 40}});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].end, 15);
  EXPECT_EQ(a[1].end, 31);
  const TimeSpans b = merge_spans({{3, 4}, {12, 22}});
  EXPECT_EQ(total_length(subtract(a, b)), 26 - 1 - 3 - 2);
  EXPECT_EQ(intersection_length(a, b), 6);
  EXPECT_EQ(total_length(clip(a, 10, 25)), 10);
  EXPECT_EQ(total_length(unite(a, b)), 31);  // [12, 22) bridges the two
}

TEST(TraceOverview, EachInstantOfAStepGoesToOneCategoryInPriorityOrder) {
  const Trace trace = read_trace_text(one_step().json(), "t.json");
  const TraceOverview o = overview(trace);
  ASSERT_EQ(o.steps.size(), 1u);
  const StepBreakdown& s = o.steps[0];
  EXPECT_EQ(s.number, 1);
  EXPECT_DOUBLE_EQ(s.duration(), 100e3);
  EXPECT_DOUBLE_EQ(category_us(s, TimeCategory::kKernel), 33);        // 10 + 8 + 10 + 5
  EXPECT_DOUBLE_EQ(category_us(s, TimeCategory::kCommunication), 5);  // 30-35, not under gemm_b
  EXPECT_DOUBLE_EQ(category_us(s, TimeCategory::kMemcpy), 8);
  EXPECT_DOUBLE_EQ(category_us(s, TimeCategory::kMemset), 0);
  EXPECT_DOUBLE_EQ(category_us(s, TimeCategory::kRuntime), 11);    // 3 + 1 + 0 + 1 + 5 + 1
  EXPECT_DOUBLE_EQ(category_us(s, TimeCategory::kDataLoader), 2);  // 97-99, after gemm_d
  EXPECT_DOUBLE_EQ(category_us(s, TimeCategory::kCpuExec), 38);    // 90 minus 52 covered
  EXPECT_DOUBLE_EQ(category_us(s, TimeCategory::kOther), 3);
  EXPECT_NEAR(s.share(TimeCategory::kKernel), 0.33, 1e-12);
  EXPECT_EQ(s.device.kernels, 5u);
}

TEST(TraceOverview, AStepSummarisesTheDeviceEventsItLaunched) {
  const TraceOverview o = overview(read_trace_text(one_step().json(), "t.json"));
  const StepBreakdown& s = o.steps[0];
  ASSERT_TRUE(s.has_device);
  EXPECT_DOUBLE_EQ(s.device_busy * 1e-3, 38);  // kernels of any kind, in the window
  EXPECT_DOUBLE_EQ(s.utilization(), 0.38);
  EXPECT_EQ(s.device.events(), 6u);
  EXPECT_DOUBLE_EQ(s.device.span() * 1e-3, 87);  // 10 to 97
  EXPECT_DOUBLE_EQ(s.device.compute * 1e-3, 33);
  EXPECT_DOUBLE_EQ(s.device.non_compute * 1e-3, 13);  // communication 5 + copy 8
  EXPECT_DOUBLE_EQ(s.device.idle * 1e-3, 41);
  EXPECT_DOUBLE_EQ(s.device.host_wait * 1e-3, 25);    // 35-60: gemm_c launched at 50
  EXPECT_DOUBLE_EQ(s.device.kernel_wait * 1e-3, 16);  // 20-22, 70-72, 80-92
  EXPECT_DOUBLE_EQ(s.lag() * 1e-3, -3);  // the device finished 3 us before the step did
  EXPECT_DOUBLE_EQ(o.device.communication * 1e-3, 10);
  EXPECT_DOUBLE_EQ(o.overlap(), 0.5);
}

TEST(TraceOverview, EachDeviceEventGoesToTheStepThatLaunchedItWhereverItRuns) {
  TraceText t;
  t.step(1, 100, 50)
      .step(2, 150, 50)
      .step(3, 300, 50)
      .runtime("cudaLaunchKernel", 145, 1, 1)
      .kernel("late", 160, 30, 1)  // launched by step 1, runs in step 2's range
      .runtime("cudaLaunchKernel", 170, 1, 2)
      .kernel("own", 190, 5, 2)
      .runtime("cudaLaunchKernel", 10, 1, 3)
      .kernel("before", 20, 5, 3)
      .runtime("cudaLaunchKernel", 250, 1, 4)
      .kernel("between", 260, 5, 4)
      .runtime("cudaLaunchKernel", 400, 1, 5)
      .kernel("after", 410, 5, 5)
      .kernel("unlaunched", 420, 5, 6);
  const TraceOverview o = overview(read_trace_text(t.json(), "t.json"));
  ASSERT_EQ(o.steps.size(), 3u);
  EXPECT_EQ(o.steps[0].device.events(), 1u);
  EXPECT_EQ(o.steps[1].device.events(), 1u);
  EXPECT_EQ(o.steps[2].device.events(), 0u);
  EXPECT_DOUBLE_EQ(o.steps[0].lag() * 1e-3, 40);  // 190 - 150
  EXPECT_DOUBLE_EQ(o.steps[0].device.span() * 1e-3, 30);
  EXPECT_DOUBLE_EQ(o.steps[2].lag(), 0);
  EXPECT_EQ(o.device.events(), 2u);
  EXPECT_EQ(o.outside.events(), 4u);
  EXPECT_EQ(o.outside_where.before, 1u);
  EXPECT_EQ(o.outside_where.between, 1u);
  EXPECT_EQ(o.outside_where.after, 1u);
  EXPECT_EQ(o.outside_where.no_launch, 1u);
  // The windows are the host ranges: the late kernel's time shows in step 2's window.
  EXPECT_EQ(o.steps[0].end, 150000);
  EXPECT_DOUBLE_EQ(category_us(o.steps[0], TimeCategory::kKernel), 0);
  EXPECT_DOUBLE_EQ(category_us(o.steps[1], TimeCategory::kKernel), 35);
  EXPECT_DOUBLE_EQ(o.average.duration(), 50e3);
  EXPECT_NEAR(o.average.lag() * 1e-3, (40.0 - 5) / 2, 1e-3);  // step 2: 195 - 200; 3 has none
  EXPECT_NEAR(o.average.device.span() * 1e-3, (30.0 + 5 + 0) / 3, 1e-3);
}

TEST(TraceOverview, ALaunchInsideAStepNestedInALongerOneGoesToTheInnerOne) {
  TraceText t;
  t.step(1, 0, 100)
      .step(2, 10, 20)  // nested in step 1 (two profilers, or a duplicate annotation)
      .runtime("cudaLaunchKernel", 15, 1, 1)
      .kernel("inner", 20, 5, 1)
      .runtime("cudaLaunchKernel", 50, 1, 2)  // after step 2 ended, still inside step 1
      .kernel("outer", 60, 5, 2);
  const TraceOverview o = overview(read_trace_text(t.json(), "t.json"));
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[0].device.events(), 1u);
  EXPECT_EQ(o.steps[1].device.events(), 1u);
  EXPECT_EQ(o.outside.events(), 0u);
}

TEST(TraceOverview, WithoutRuntimeCallsEachDeviceEventGoesToTheStepItStartsIn) {
  TraceText t;
  t.step(1, 0, 50).step(2, 50, 50).kernel("a", 10, 5, 1).kernel("b", 60, 5, 2).kernel("c", 120, 5, 3);
  const TraceOverview o = overview(read_trace_text(t.json(), "t.json"));
  EXPECT_TRUE(o.by_device_start);
  EXPECT_EQ(o.steps[0].device.events(), 1u);
  EXPECT_EQ(o.steps[1].device.events(), 1u);
  EXPECT_EQ(o.outside_where.after, 1u);
  EXPECT_FALSE(overview(read_trace_text(one_step().json(), "t.json")).by_device_start);
}

TEST(TraceOverview, TheMeanLagIsOverTheStepsThatLaunchedDeviceWork) {
  TraceText t;
  t.step(1, 0, 100).step(2, 100, 100).step(3, 200, 100).step(4, 300, 100)
      .runtime("cudaLaunchKernel", 10, 1, 1)
      .kernel("k", 20, 100, 1);  // step 1's only event: lag 20 us, span 100 us
  const TraceOverview o = overview(read_trace_text(t.json(), "t.json"));
  EXPECT_FALSE(o.average.device.empty());  // a quarter of an event still is device work
  EXPECT_DOUBLE_EQ(o.average.lag() * 1e-3, 20);
  EXPECT_DOUBLE_EQ(o.average.device.span() * 1e-3, 25);
}

TEST(TraceOverview, WithoutStepAnnotationsTheWholeTraceIsOneWindow) {
  TraceText t;
  t.op("aten::mm", 10, 20).op("aten::add", 40, 10);
  const TraceOverview o = overview(read_trace_text(t.json(), "t.json"));
  EXPECT_FALSE(o.annotated_steps);
  EXPECT_FALSE(o.has_device);
  ASSERT_EQ(o.steps.size(), 1u);
  EXPECT_EQ(o.steps[0].number, -1);
  EXPECT_DOUBLE_EQ(o.steps[0].duration(), 40e3);
  EXPECT_DOUBLE_EQ(category_us(o.steps[0], TimeCategory::kCpuExec), 30);
  EXPECT_DOUBLE_EQ(category_us(o.steps[0], TimeCategory::kOther), 10);
  EXPECT_EQ(o.overlap(), -1);
}

TEST(TraceOverview, AHostCollectiveOfACpuOnlyRankIsCommunication) {
  const TraceOverview o = overview(read_trace(std::string(TORCHPERF_TEST_SOURCE_DIR) +
                                              "/tests/data/traces/cpu-only-rank34.json.gz"));
  ASSERT_EQ(o.steps.size(), 1u);
  EXPECT_FALSE(o.has_device);
  EXPECT_GT(o.steps[0].share(TimeCategory::kCommunication), 0.5);
}

TEST(TraceOverview, TheCategoriesOfEveryStepOfARealTraceSumToItsWindow) {
  const Trace trace = read_trace(std::string(TORCHPERF_TEST_SOURCE_DIR) +
                                 "/tests/data/traces/diff-control-a100.json.gz");
  const TraceOverview o = overview(trace);
  ASSERT_EQ(o.steps.size(), 6u);
  for (const StepBreakdown& s : o.steps) {
    double sum = 0;
    for (double t : s.time) {
      EXPECT_GE(t, 0);
      sum += t;
    }
    EXPECT_NEAR(sum, s.duration(), 1e-6 * s.duration());
    EXPECT_NEAR(s.device.compute + s.device.non_compute + s.device.idle, s.device.span(),
                1e-6 * s.device.span());
    EXPECT_LE(s.device.span() - s.duration(), s.lag() + 1);
    EXPECT_GT(s.utilization(), 0.5);
    EXPECT_LE(s.utilization(), 1.0);
  }
  EXPECT_GT(o.overlap(), 0);
  EXPECT_LT(o.overlap(), 1);
}

}  // namespace
}  // namespace torchperf
