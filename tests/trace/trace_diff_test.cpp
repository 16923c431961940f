#include "torchperf/trace/trace_diff.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/trace_text.h"
#include "test_paths.h"
#include "torchperf/trace/trace_reader.h"

namespace torchperf {
namespace {

using testing::TraceText;

const DiffRow* find(const std::vector<DiffRow>& rows, const std::string& name) {
  const auto it =
      std::find_if(rows.begin(), rows.end(), [&](const DiffRow& r) { return r.name == name; });
  return it == rows.end() ? nullptr : &*it;
}

TEST(TraceDiff, OperatorsAndKernelsAreAddedRemovedSlowerFasterOrTheSamePerStep) {
  TraceText before, after;
  before.step(1, 0, 100)
      .op("aten::mm", 0, 40)
      .op("aten::gone", 50, 10)
      .op("aten::same", 70, 10)
      .kernel("k_slow", 0, 10, 1)
      .kernel("k_fast", 20, 30, 2);
  // Two steps after: per-step times halve the totals.
  after.step(1, 0, 100)
      .step(2, 100, 100)
      .op("aten::mm", 0, 10)
      .op("aten::mm", 100, 10)  // 40 -> 10 per step: faster
      .op("aten::new", 50, 6)
      .op("aten::new", 150, 6)  // added
      .op("aten::same", 70, 10)
      .op("aten::same", 170, 10.2)  // within 5%: the same
      .kernel("k_slow", 0, 30, 1)
      .kernel("k_slow", 100, 30, 2)
      .kernel("k_fast", 20, 5, 3)
      .kernel("k_fast", 120, 5, 4);
  const TraceDiff d = diff_traces(analyze_trace(read_trace_text(before.json(), "before.json")),
                                  analyze_trace(read_trace_text(after.json(), "after.json")));
  EXPECT_EQ(d.steps_before, 1u);
  EXPECT_EQ(d.steps_after, 2u);
  EXPECT_EQ(find(d.operators, "aten::mm")->change, Change::kFaster);
  EXPECT_DOUBLE_EQ(find(d.operators, "aten::mm")->after, 10e3);
  EXPECT_DOUBLE_EQ(find(d.operators, "aten::mm")->calls_after, 1);
  EXPECT_EQ(find(d.operators, "aten::new")->change, Change::kAdded);
  EXPECT_EQ(find(d.operators, "aten::gone")->change, Change::kRemoved);
  EXPECT_EQ(find(d.operators, "aten::same")->change, Change::kSame);
  EXPECT_EQ(find(d.kernels, "k_slow")->change, Change::kSlower);
  EXPECT_EQ(find(d.kernels, "k_fast")->change, Change::kFaster);
  EXPECT_EQ(d.operators.front().name, "aten::mm");  // the largest change first
  EXPECT_EQ(d.operators.back().change, Change::kSame);
}

TEST(TraceDiff, TheA100AndV100TracesDifferInTheirKernelsNotTheirCommunicationShare) {
  const std::string dir = std::string(TORCHPERF_TEST_SOURCE_DIR) + "/tests/data/traces/";
  const TraceDiff d = diff_traces(analyze_trace(read_trace(dir + "diff-control-a100.json.gz")),
                                  analyze_trace(read_trace(dir + "diff-test-v100.json.gz")));
  EXPECT_GT(d.step_after.duration(), 1.5 * d.step_before.duration());
  const auto added = std::count_if(d.kernels.begin(), d.kernels.end(),
                                   [](const DiffRow& r) { return r.change == Change::kAdded; });
  EXPECT_GT(added, 10);  // Volta's kernels are not Ampere's
  const DiffRow* sgemm = find(d.kernels, "volta_sgemm_128x32_nt");
  ASSERT_NE(sgemm, nullptr);
  EXPECT_EQ(sgemm->change, Change::kAdded);
}

}  // namespace
}  // namespace torchperf
