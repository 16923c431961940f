#include "torchperf/trace/trace_views.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/trace_text.h"
#include "torchperf/trace/trace_reader.h"

namespace torchperf {
namespace {

using testing::TraceText;

Trace nested_operators() {
  TraceText t;
  t.op("A", 0, 100, 1, R"("Input Dims": [[2, 3]])")
      .op("B", 10, 20)
      .runtime("cudaLaunchKernel", 15, 1, 1)
      .kernel("k", 50, 5, 1)
      .op("C", 40, 10)
      .op("D", 42, 2)
      .op("A", 0, 10, 2, R"("Input Dims": [[4]])");
  return read_trace_text(t.json(), "t.json");
}

const OperatorRow& row(const std::vector<OperatorRow>& rows, const std::string& name) {
  const auto it =
      std::find_if(rows.begin(), rows.end(), [&](const OperatorRow& r) { return r.name == name; });
  EXPECT_NE(it, rows.end()) << name;
  return *it;
}

TEST(OperatorView, SelfTimeIsTheDurationMinusTheOperatorsCalledInsideOnTheSameThread) {
  const auto rows = operator_view(nested_operators(), false);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, "A");  // largest self time first
  EXPECT_EQ(row(rows, "A").calls, 2u);
  EXPECT_DOUBLE_EQ(row(rows, "A").host_total, 110e3);
  EXPECT_DOUBLE_EQ(row(rows, "A").host_self, 80e3);  // 100 - 20 - 10, and 10 on thread 2
  EXPECT_DOUBLE_EQ(row(rows, "B").host_self, 20e3);  // a runtime call is not a child
  EXPECT_DOUBLE_EQ(row(rows, "C").host_self, 8e3);
  EXPECT_DOUBLE_EQ(row(rows, "D").host_self, 2e3);
}

TEST(OperatorView, DeviceTimeGoesToTheInnermostOperatorThatLaunchedIt) {
  const auto rows = operator_view(nested_operators(), false);
  EXPECT_DOUBLE_EQ(row(rows, "B").device_total, 5e3);
  EXPECT_DOUBLE_EQ(row(rows, "A").device_total, 0);
}

TEST(OperatorView, ByShapeKeepsCallsWithDifferentInputDimsApart) {
  const auto rows = operator_view(nested_operators(), true);
  ASSERT_EQ(rows.size(), 5u);
  std::vector<std::string> shapes;
  for (const auto& r : rows)
    if (r.name == "A") shapes.push_back(r.shapes);
  std::sort(shapes.begin(), shapes.end());
  EXPECT_EQ(shapes, (std::vector<std::string>{"[[2, 3]]", "[[4]]"}));
}

TEST(KernelView, GroupsByNameWithClassAndShareOfAllDeviceTime) {
  TraceText t;
  t.kernel("k1", 0, 10, 1)
      .kernel("k1", 20, 10, 2)
      .kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 40, 20, 3)
      .memcpy("Memcpy DtoD (Device -> Device)", 70, 10, 4, 100);
  const auto rows = kernel_view(read_trace_text(t.json(), "t.json"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "k1");  // ties broken by name: k1 < nccl…
  EXPECT_EQ(rows[0].kind, KernelClass::kComputation);
  EXPECT_EQ(rows[0].count, 2u);
  EXPECT_DOUBLE_EQ(rows[0].mean(), 10e3);
  EXPECT_DOUBLE_EQ(rows[0].share, 0.4);
  EXPECT_EQ(rows[1].kind, KernelClass::kCommunication);
  EXPECT_EQ(rows[2].kind, KernelClass::kMemory);
  const KernelClassTotals totals = kernel_class_totals(rows);
  EXPECT_DOUBLE_EQ(totals.computation, 20e3);
  EXPECT_DOUBLE_EQ(totals.communication, 20e3);
  EXPECT_DOUBLE_EQ(totals.memory, 10e3);
}

TEST(LaunchStats, ShortKernelsRunForLessThanTheirLaunchTookAndDelayIsFromTheCallsEnd) {
  TraceText t;
  t.runtime("cudaLaunchKernel", 0, 4, 1)
      .kernel("tiny", 10, 1, 1)
      .runtime("cudaLaunchKernel", 5, 2, 2)
      .kernel("big", 30, 50, 2)
      .runtime("cudaLaunchKernel", 8, 4, 3)
      .kernel("tiny", 80, 2, 3)
      .runtime("cudaLaunchKernel", 100, 60, 4)  // a runtime outlier: not short, however small
      .kernel("tiny", 300, 1, 4)                // and a delay outlier: 140 us after the call
      .runtime("cudaGraphLaunch", 400, 1, 5)
      .kernel("graphed", 410, 1, 5)  // a graph's kernel: not one launch's
      .kernel("orphan", 500, 1, 99);  // no launch in the trace
  const LaunchStats s = launch_stats(read_trace_text(t.json(), "t.json"));
  EXPECT_EQ(s.kernels, 6u);
  EXPECT_EQ(s.matched, 4u);
  EXPECT_EQ(s.short_kernels, 2u);
  EXPECT_EQ(s.runtime_outliers, 1u);
  EXPECT_EQ(s.delay_outliers, 1u);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].name, "tiny");
  EXPECT_EQ(s.rows[0].count, 3u);
  EXPECT_EQ(s.rows[0].short_kernels, 2u);
  EXPECT_DOUBLE_EQ(s.rows[0].delay_total, (6 + 68 + 140) * 1e3);
  EXPECT_DOUBLE_EQ(s.delay.median, 68e3);  // delays 6, 23, 68, 140: the upper middle one
  EXPECT_DOUBLE_EQ(s.delay.max, 140e3);
}

TEST(CopyView, CopiesAndSetsByKindWithTheirBandwidth) {
  TraceText t;
  t.memcpy("Memcpy HtoD (Pageable -> Device)", 0, 10, 1, 20'000)
      .memcpy("Memcpy HtoD (Pageable -> Device)", 20, 10, 2, 40'000)
      .memcpy("Memcpy DtoD (Device -> Device)", 40, 2, 3, 1'000'000)
      .kernel("k", 50, 5, 4);
  const auto rows = copy_view(read_trace_text(t.json(), "t.json"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kind, "HtoD pageable");
  EXPECT_EQ(rows[0].count, 2u);
  EXPECT_DOUBLE_EQ(rows[0].gigabytes_per_second(), 60'000 / 20e3);  // 3 GB/s
  EXPECT_EQ(rows[1].kind, "DtoD");
  EXPECT_DOUBLE_EQ(rows[1].gigabytes_per_second(), 500);
}

TEST(KernelSequences, CountRecurringRunsOfKernelsOnAStreamWithTheirGaps) {
  TraceText t;
  // Stream 7: a b c a b c a b, with 1 us gaps; stream 9 interleaves in time but is apart.
  const char* names[] = {"a", "b", "c", "a", "b", "c", "a", "b"};
  for (int i = 0; i < 8; ++i) t.kernel(names[i], 10.0 * i, 9, 100 + i, 7);
  t.kernel("a", 1, 2, 200, 9).kernel("b", 4, 2, 201, 9);
  const auto rows = kernel_sequences(read_trace_text(t.json(), "t.json"), 3);
  ASSERT_EQ(rows.size(), 3u);  // a b c, b c a, c a b: each twice, equal times, then by names
  EXPECT_EQ(rows[0].kernels, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(rows[2].kernels, (std::vector<std::string>{"c", "a", "b"}));
  EXPECT_EQ(rows[0].count, 2u);
  EXPECT_DOUBLE_EQ(rows[0].kernel_time * 1e-3, 2 * 27);
  EXPECT_DOUBLE_EQ(rows[0].gap_time * 1e-3, 2 * 2);
}

TEST(KernelSequences, CopiesAndCommunicationEndARunAndLengthZeroIsNone) {
  TraceText t;
  t.kernel("a", 0, 1, 1).kernel("b", 2, 1, 2).memcpy("Memcpy DtoD", 4, 1, 3, 8)
      .kernel("a", 6, 1, 4).kernel("b", 8, 1, 5)
      .kernel("ncclKernel_AllReduce", 10, 1, 6).kernel("a", 12, 1, 7).kernel("b", 14, 1, 8);
  const Trace trace = read_trace_text(t.json(), "t.json");
  const auto pairs = kernel_sequences(trace, 2);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].count, 3u);  // a b, three times; never b a across a copy or nccl
  EXPECT_TRUE(kernel_sequences(trace, 3).empty());
  EXPECT_TRUE(kernel_sequences(trace, 0).empty());
}

}  // namespace
}  // namespace torchperf
