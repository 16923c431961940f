#include "torchperf/trace/device_summary.h"

#include <gtest/gtest.h>

#include "support/trace_text.h"
#include "torchperf/trace/trace_reader.h"

namespace torchperf {
namespace {

using testing::TraceText;

DeviceSummary summarize_all(const Trace& trace) {
  std::vector<std::uint32_t> all;
  for (std::uint32_t i = 0; i < trace.device.size(); ++i) all.push_back(i);
  return summarize_device(trace, LaunchIndex(trace), all);
}

TraceText six_events() {
  TraceText t;
  t.device();
  testing::add_six_device_events(t);
  return t;
}

TEST(DeviceSummary, BusyTimeSplitsByTheSetOfKernelClassesRunning) {
  const DeviceSummary d = summarize_all(read_trace_text(six_events().json(), "t.json"));
  EXPECT_EQ(d.kernels, 5u);
  EXPECT_EQ(d.memcpys, 1u);
  EXPECT_DOUBLE_EQ(d.class_overlap[1] * 1e-3, 28);  // computation alone: 10 + 3 + 10 + 5
  EXPECT_DOUBLE_EQ(d.class_overlap[3] * 1e-3, 5);   // computation + communication: 25-30
  EXPECT_DOUBLE_EQ(d.class_overlap[2] * 1e-3, 5);   // communication alone: 30-35
  EXPECT_DOUBLE_EQ(d.class_overlap[4] * 1e-3, 8);   // memory
  EXPECT_DOUBLE_EQ(d.class_time[0] * 1e-3, 33);     // durations, computation
  EXPECT_DOUBLE_EQ(d.class_time[1] * 1e-3, 10);
  EXPECT_DOUBLE_EQ(d.class_time[2] * 1e-3, 8);
}

TEST(DeviceSummary, TheTemporalBreakdownIsComputeNonComputeAndIdleOverTheSpan) {
  const DeviceSummary d = summarize_all(read_trace_text(six_events().json(), "t.json"));
  EXPECT_DOUBLE_EQ(d.span() * 1e-3, 87);  // 10 to 97
  EXPECT_DOUBLE_EQ(d.busy * 1e-3, 46);
  EXPECT_DOUBLE_EQ(d.compute * 1e-3, 33);
  EXPECT_DOUBLE_EQ(d.non_compute * 1e-3, 13);  // communication alone 5 + copy 8
  EXPECT_DOUBLE_EQ(d.idle * 1e-3, 41);
  EXPECT_DOUBLE_EQ(d.communication * 1e-3, 10);
  EXPECT_DOUBLE_EQ(d.overlap(), 0.5);
}

TEST(DeviceSummary, EachGapOnAStreamGoesToTheCauseOfTheEventThatEndsIt) {
  const DeviceSummary d = summarize_all(read_trace_text(six_events().json(), "t.json"));
  ASSERT_EQ(d.streams.size(), 1u);
  const StreamSummary& s = d.streams[0];
  EXPECT_EQ(s.stream, 7);
  EXPECT_EQ(s.events, 6u);
  EXPECT_DOUBLE_EQ(s.host_wait * 1e-3, 25);    // 35-60: c was launched at 50
  EXPECT_DOUBLE_EQ(s.kernel_wait * 1e-3, 16);  // 20-22, 70-72, 80-92: queued, under 30 us
  EXPECT_DOUBLE_EQ(s.other_wait * 1e-3, 0);
  EXPECT_DOUBLE_EQ(s.idle() * 1e-3, d.idle * 1e-3);  // one stream: its gaps are the idle time
  EXPECT_DOUBLE_EQ(d.host_wait, s.host_wait);
}

TEST(DeviceSummary, AGapOfThirtyMicrosecondsOrMoreWithTheNextEventQueuedIsOther) {
  TraceText t;
  t.runtime("cudaLaunchKernel", 5, 1, 1)
      .kernel("k1", 10, 10, 1)
      .runtime("cudaLaunchKernel", 6, 1, 2)
      .kernel("k2", 50, 10, 2)  // queued at 6; 30 us gap: other
      .runtime("cudaLaunchKernel", 7, 1, 3)
      .kernel("k3", 89, 10, 3)  // 29 us gap: kernel wait
      .kernel("k4", 200, 10, 4);  // no launch in the trace: not host wait; 101 us: other
  const DeviceSummary d = summarize_all(read_trace_text(t.json(), "t.json"));
  ASSERT_EQ(d.streams.size(), 1u);
  EXPECT_DOUBLE_EQ(d.streams[0].other_wait * 1e-3, 30 + 101);
  EXPECT_DOUBLE_EQ(d.streams[0].kernel_wait * 1e-3, 29);
  EXPECT_DOUBLE_EQ(d.streams[0].host_wait, 0);
}

TEST(DeviceSummary, StreamsAreSummarisedApartAndTheirIdleTimesNeedNotAddUpToTheDevices) {
  TraceText t;
  t.runtime("cudaLaunchKernel", 0, 1, 1)
      .kernel("a", 10, 20, 1, 7)
      .runtime("cudaLaunchKernel", 1, 1, 2)
      .kernel("b", 40, 10, 2, 7)
      .runtime("cudaLaunchKernel", 2, 1, 3)
      .kernel("c", 15, 30, 3, 9);
  const DeviceSummary d = summarize_all(read_trace_text(t.json(), "t.json"));
  ASSERT_EQ(d.streams.size(), 2u);
  EXPECT_EQ(d.streams[0].stream, 7);
  EXPECT_DOUBLE_EQ(d.streams[0].kernel_wait * 1e-3, 10);  // 30-40 on stream 7
  EXPECT_EQ(d.streams[1].events, 1u);
  EXPECT_DOUBLE_EQ(d.streams[1].idle(), 0);
  EXPECT_DOUBLE_EQ(d.idle, 0);  // stream 9 ran through stream 7's gap
}

TEST(DeviceSummary, TheLaunchQueueCountsLaunchedEventsThatHaveNotStarted) {
  const DeviceSummary d = summarize_all(read_trace_text(six_events().json(), "t.json"));
  const StreamSummary& s = d.streams[0];
  // Launches at 5, 9, 13, 40, 50, 56; starts at 10, 22, 25, 60, 72, 92: the length goes
  // 1 2 1 2 1 0 1 2 3 2 1 0.
  EXPECT_EQ(s.max_queue, 3);
  EXPECT_DOUBLE_EQ(s.mean_queue_over_changes, 16.0 / 12);
  EXPECT_DOUBLE_EQ(s.mean_queue, 108.0 / 87);  // time-weighted, 5 to 92
}

TEST(DeviceSummary, SyncsAreWaitsNotWorkAndAnEmptySetIsEmpty) {
  TraceText t;
  t.kernel("k", 10, 10, 1)
      .raw(R"({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 30, "dur": 50, "args": {"stream": 7, "correlation": 9, "device": 0}})");
  const Trace trace = read_trace_text(t.json(), "t.json");
  const DeviceSummary d = summarize_all(trace);
  EXPECT_EQ(d.events(), 1u);
  EXPECT_DOUBLE_EQ(d.span() * 1e-3, 10);
  EXPECT_DOUBLE_EQ(d.idle, 0);
  EXPECT_TRUE(summarize_device(trace, LaunchIndex(trace), {}).empty());
}

TEST(DeviceSummary, NamesEachSetOfClasses) {
  EXPECT_STREQ(class_overlap_name(5), "computation + memory");
  EXPECT_STREQ(class_overlap_name(7), "computation + communication + memory");
}

}  // namespace
}  // namespace torchperf
