#include "torchperf/serve/queue_model.h"

#include <gtest/gtest.h>

namespace torchperf {
namespace {

// 10 ms a call plus 1 ms a sample: batching pays.
ServiceCurve affine() { return ServiceCurve({{1, 0.011}, {8, 0.018}, {32, 0.042}}); }

TEST(QueueModelTest, TheCurveInterpolatesAndExtrapolatesPerSample) {
  const ServiceCurve c = affine();
  EXPECT_DOUBLE_EQ(c.seconds(1), 0.011);
  EXPECT_NEAR(c.seconds(4), 0.011 + 3.0 / 7.0 * 0.007, 1e-12);
  EXPECT_NEAR(c.seconds(64), 0.042 * 2, 1e-12);
  EXPECT_THROW(ServiceCurve({{0, 1.0}}), std::invalid_argument);
  EXPECT_THROW(ServiceCurve().seconds(1), std::logic_error);
}

TEST(QueueModelTest, ATrickleOfRequestsWaitsOnlyForTheDelayAndOneCall) {
  const BatchingPolicy policy{8, 0.002, 256};
  const QueuePrediction p = predict_latency(policy, 1, affine(), 1.0, 2000);
  // Alone in the queue: the 2 ms delay, then a call at batch 1.
  EXPECT_NEAR(p.quantile_s(0.5), 0.013, 1e-3);
  EXPECT_LT(p.utilization, 0.05);
}

TEST(QueueModelTest, BatchingCarriesARateThatOneRequestPerCallCannot) {
  // 1/0.011 s = 91 calls a second: at 150/s one request per call is overloaded.
  const QueuePrediction single = predict_latency({1, 0.0, 256}, 1, affine(), 150, 5000);
  const QueuePrediction batched = predict_latency({16, 0.002, 256}, 1, affine(), 150, 5000);
  EXPECT_GT(single.quantile_s(0.99), 1.0);  // the queue grows without bound
  EXPECT_LT(batched.quantile_s(0.99), 0.1);
}

TEST(QueueModelTest, TwoInstancesServeWhatOneCannot) {
  const BatchingPolicy policy{1, 0.0, 256};
  EXPECT_GT(predict_latency(policy, 1, affine(), 120, 5000).quantile_s(0.99), 1.0);
  EXPECT_LT(predict_latency(policy, 2, affine(), 120, 5000).quantile_s(0.99), 0.2);
}

TEST(QueueModelTest, TheMaxRateMeetsTheObjectiveAndTenPercentMoreDoesNot) {
  const BatchingPolicy policy{8, 0.002, 256};
  const double rate = predict_max_rate(policy, 1, affine(), 0.99, 0.05);
  ASSERT_GT(rate, 100);
  EXPECT_LE(predict_latency(policy, 1, affine(), rate, 5000).quantile_s(0.99), 0.05);
  EXPECT_GT(predict_latency(policy, 1, affine(), rate * 1.1, 5000).quantile_s(0.99), 0.05);
  // A limit below one call at batch 1 cannot be met at any rate.
  EXPECT_EQ(predict_max_rate(policy, 1, affine(), 0.99, 0.005), 0);
}

}  // namespace
}  // namespace torchperf
