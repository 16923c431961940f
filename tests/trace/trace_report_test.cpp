#include "torchperf/trace/trace_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/trace/trace_reader.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

TraceAnalysis real(const std::string& name) {
  return analyze_trace(
      read_trace(std::string(TORCHPERF_TEST_SOURCE_DIR) + "/tests/data/traces/" + name));
}

TraceReportOptions every_view() {
  TraceReportOptions o;
  o.operators = o.kernels = o.launches = o.sequences = true;
  o.top = 5;
  return o;
}

TEST(TraceReport, TheTerminalReportHasTheOverviewDeviceTimeAdviceAndTheViewsAskedFor) {
  TraceReport r;
  r.traces.push_back(real("diff-control-a100.json.gz"));
  const std::string text = format_trace_report(r, every_view());
  for (const char* part :
       {"Kineto form, 34.8 MB of JSON (1.8 MB gzip)", "rank 3 of 8 (nccl)",
        "steps: 6 (#1009 to #1014)", "step time breakdown", "#1014", "mean", "share", "data loader",
        "device work per step", "9450 device events: 9450 launched in steps", "gaps: host wait",
        "computation + communication", "queue: max", "advice", "sync", "operators (5 of",
        "aten::_local_scalar_dense", "kernels (5 of", "ncclKernel_SendRecv_RING_SIMPLE",
        "launches: 8568 of 8568 kernels launched one by one", "kernel sequences (5 of",
        "vectorized_elementwise_kernel >", "copies and sets", "HtoD pinned"})
    EXPECT_NE(text.find(part), std::string::npos) << part;
  r.traces[0].info.path = "x";
  EXPECT_EQ(format_trace_report(r, TraceReportOptions{}).find("by host self time"),
            std::string::npos);
}

TEST(TraceReport, ManyStepsAreShownFirstAndLastWithTheMean) {
  TraceOverview o;
  for (int i = 0; i < 50; ++i) {
    StepBreakdown s;
    s.number = i;
    s.end = 1000;
    o.steps.push_back(s);
  }
  o.annotated_steps = true;
  const TextTable t = step_table(o, 10);
  EXPECT_EQ(t.rows.size(), 10u + 1 + 2);  // ten steps, "... 40 more", the mean and the share
  EXPECT_EQ(t.rows[5][0], "... 40 more");
  EXPECT_EQ(t.rows[6][0], "#45");
}

TEST(TraceReport, JsonFollowsTheSchemaWithStepsCategoriesAndAdvice) {
  TraceReport r;
  r.traces.push_back(real("nccl-distributed.json.gz"));
  const nlohmann::json j = to_json(r, every_view());
  EXPECT_EQ(j.at("schema"), "torchperf.trace/2");
  const auto& t = j.at("traces").at(0);
  EXPECT_EQ(t.at("form"), "kineto");
  EXPECT_EQ(t.at("rank"), 0);
  ASSERT_EQ(t.at("steps").size(), 3u);
  EXPECT_EQ(t.at("steps").at(0).at("step"), 4);
  double sum = 0;
  for (const auto& [key, value] : t.at("average").at("categories_ms").items())
    sum += value.get<double>();
  EXPECT_NEAR(sum, t.at("average").at("ms").get<double>(), 1e-6);
  EXPECT_TRUE(t.at("average").at("device").contains("idle_causes_ms"));
  EXPECT_EQ(t.at("steps").at(0).at("device").at("events"), 1258);
  EXPECT_EQ(t.at("device").at("events"), 3 * 1258);
  EXPECT_EQ(t.at("device").at("streams").size(), 2u);
  EXPECT_EQ(t.at("outside_steps").at("events"), 0);
  EXPECT_EQ(t.at("sequences").at("length"), 3);
  EXPECT_EQ(t.at("sequences").at("rows").size(), 5u);
  EXPECT_EQ(t.at("kernels").size(), 5u);
  EXPECT_GT(t.at("kernels_total").get<int>(), 5);
  EXPECT_FALSE(t.at("advice").empty());
  EXPECT_TRUE(t.at("device").at("communication_overlap").is_number());
}

TEST(TraceReport, JsonOfADiffAndOfRanks) {
  TraceReport d;
  d.traces = {real("diff-control-a100.json.gz"), real("diff-test-v100.json.gz")};
  d.diff = diff_traces(d.traces[0], d.traces[1]);
  const nlohmann::json j = to_json(d, every_view());
  EXPECT_EQ(j.at("diff").at("kernels").size(), 5u);
  EXPECT_GT(j.at("diff").at("kernel_changes").at("added").get<int>(), 10);
  TraceReport r;
  r.traces = d.traces;
  r.ranks = compare_ranks(r.traces, false);
  const nlohmann::json k = to_json(r, every_view());
  EXPECT_EQ(k.at("ranks").at("slowest_rank"), 1);
  EXPECT_EQ(k.at("ranks").at("rows").size(), 2u);
  EXPECT_NE(format_trace_report(r, TraceReportOptions{}).find("slowest: rank 1"),
            std::string::npos);
}

nlohmann::json drawn(const std::string& html, const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("torchperf-trace-html-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path page = dir / (name + ".html");
  std::ofstream(page) << html;
  fs::create_directories("test-artifacts");
  const std::string dom =
      testing::browser_dom(page.string(), dir.string(),
                           fs::absolute(fs::path("test-artifacts") / (name + ".png")).string());
  fs::remove_all(dir);
  const std::string marker = "id=\"torchperf-status\">";
  const auto at = dom.find(marker);
  if (at == std::string::npos) return nullptr;
  return nlohmann::json::parse(
      dom.substr(at + marker.size(), dom.find("</p>", at) - at - marker.size()));
}

TEST(TraceReport, EveryPanelOfTheHtmlPagesDrawsEveryMarkInHeadlessChromium) {
  TraceReport one;
  one.traces.push_back(real("diff-control-a100.json.gz"));
  TraceReport diff;
  diff.traces = {real("diff-control-a100.json.gz"), real("diff-test-v100.json.gz")};
  diff.diff = diff_traces(diff.traces[0], diff.traces[1]);
  TraceReport ranks;
  ranks.traces = diff.traces;
  ranks.ranks = compare_ranks(ranks.traces, false);
  const TraceReportOptions options = every_view();
  for (const auto& [name, report] : {std::pair<std::string, const TraceReport*>{"trace", &one},
                                     {"trace-diff", &diff},
                                     {"trace-ranks", &ranks}}) {
    const nlohmann::json status = drawn(render_trace_html(*report, options), name);
    ASSERT_TRUE(status.is_object()) << name << ": the page never finished drawing";
    EXPECT_TRUE(status.at("done").get<bool>()) << name;
    EXPECT_TRUE(status.at("errors").empty()) << name << ": " << status.at("errors").dump();
    const auto panels = trace_panels(*report, options);
    EXPECT_FALSE(panels.empty());
    for (const Panel& p : panels)
      for (const auto& [type, count] : p.expected_marks)
        EXPECT_EQ(status.at("marks").at(p.id).value(type, -1), count) << name << " " << p.id;
  }
}

}  // namespace
}  // namespace torchperf
