#include "torchperf/serve/server_metrics.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace torchperf {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST(ServerMetricsTest, HistogramBucketsAreCumulativeAndEndWithInfinity) {
  Histogram h({1, 2, 4});
  for (const double v : {0.5, 1.0, 3.0, 3.5, 100.0}) h.observe(v);
  std::string out;
  h.render(out, "x", "help text");
  EXPECT_TRUE(has_line(out, "# TYPE x histogram")) << out;
  EXPECT_TRUE(has_line(out, "x_bucket{le=\"1\"} 2")) << out;  // 0.5 and 1.0: le is inclusive
  EXPECT_TRUE(has_line(out, "x_bucket{le=\"2\"} 2")) << out;
  EXPECT_TRUE(has_line(out, "x_bucket{le=\"4\"} 4")) << out;
  EXPECT_TRUE(has_line(out, "x_bucket{le=\"+Inf\"} 5")) << out;
  EXPECT_TRUE(has_line(out, "x_sum 108")) << out;
  EXPECT_TRUE(has_line(out, "x_count 5")) << out;
  EXPECT_THROW(Histogram({2, 1}), std::invalid_argument);
}

TEST(ServerMetricsTest, BatchSizeBucketsDoubleUpToTheLargestBatch) {
  EXPECT_EQ(batch_size_buckets(8), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(batch_size_buckets(12), (std::vector<double>{1, 2, 4, 8, 12}));
  EXPECT_EQ(batch_size_buckets(1), (std::vector<double>{1}));
}

TEST(ServerMetricsTest, TheExpositionHasResponsesQueueDepthBatchesAndLatencies) {
  ServerMetrics m(8);
  m.count_response(200);
  m.count_response(200);
  m.count_response(503);
  m.set_queue_depth(3);
  m.observe_batch(5);
  m.observe_request(0.001, 0.004, 0.006);
  const std::string out = m.render();
  EXPECT_TRUE(has_line(out, "torchperf_responses_total{code=\"200\"} 2")) << out;
  EXPECT_TRUE(has_line(out, "torchperf_responses_total{code=\"503\"} 1")) << out;
  EXPECT_TRUE(has_line(out, "torchperf_queue_depth 3")) << out;
  EXPECT_TRUE(has_line(out, "torchperf_batch_size_bucket{le=\"4\"} 0")) << out;
  EXPECT_TRUE(has_line(out, "torchperf_batch_size_bucket{le=\"8\"} 1")) << out;
  EXPECT_TRUE(has_line(out, "torchperf_request_seconds_bucket{le=\"0.005\"} 0")) << out;
  EXPECT_TRUE(has_line(out, "torchperf_request_seconds_bucket{le=\"0.01\"} 1")) << out;
  for (const char* name : {"torchperf_queue_seconds", "torchperf_compute_seconds"})
    EXPECT_TRUE(has_line(out, std::string("# TYPE ") + name + " histogram")) << name;
}

}  // namespace torchperf

namespace torchperf {

TEST(ServerMetricsTest, TheBatchSizeHistogramIsReadBackFromTheText) {
  ServerMetrics m(8);
  for (const std::size_t b : {1, 1, 3, 8, 8, 8}) m.observe_batch(b);
  const auto counts = parse_batch_size_histogram(m.render());
  EXPECT_EQ(counts.at(1), 2u);
  EXPECT_EQ(counts.at(2), 0u);
  EXPECT_EQ(counts.at(4), 1u);
  EXPECT_EQ(counts.at(8), 3u);
  EXPECT_TRUE(parse_batch_size_histogram("# nothing").empty());
}

}  // namespace torchperf

namespace torchperf {

TEST(ServerMetricsTest, EachLengthBucketSaysItsCallsFillPaddingShareAndQueueDelay) {
  ServerMetrics m(4);
  m.observe_bucket("64", {2, 60, 128, 0.010});  // two requests, 60 tokens padded to 128
  m.observe_bucket("64", {4, 132, 256, 0.030});
  m.observe_bucket("16", {1, 10, 16, 0.002});
  const std::string out = m.render();
  const auto has = [&](const std::string& line) {
    return out.find(line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has("torchperf_bucket_calls_total{bucket=\"64\"} 2")) << out;
  EXPECT_TRUE(has("torchperf_bucket_requests_total{bucket=\"64\"} 6")) << out;
  EXPECT_TRUE(has("torchperf_bucket_padded_tokens_total{bucket=\"64\"} 384")) << out;
  EXPECT_TRUE(has("torchperf_bucket_fill{bucket=\"64\"} 0.75")) << out;  // 6 of 2 x 4
  EXPECT_TRUE(has("torchperf_bucket_padding_share{bucket=\"64\"} 0.5")) << out;  // 1 - 192/384
  EXPECT_NE(out.find("torchperf_bucket_queue_delay_seconds{bucket=\"16\"} 0.002"),
            std::string::npos)
      << out;
  EXPECT_TRUE(has("# TYPE torchperf_bucket_fill gauge")) << out;
  // A server that formed no bucketed call says nothing of buckets.
  EXPECT_EQ(ServerMetrics(4).render().find("torchperf_bucket"), std::string::npos);
}

}  // namespace torchperf
