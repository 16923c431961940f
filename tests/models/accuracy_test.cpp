#include "torchperf/models/accuracy.h"

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/models/model.h"

namespace torchperf {

TEST(AccuracyTest, IdenticalOutputsAgreeExactly) {
  const auto x = torch::randn({4, 10});
  const Accuracy a = compare_outputs({x}, {x.clone()});
  EXPECT_TRUE(a.comparable);
  EXPECT_DOUBLE_EQ(a.max_abs_error, 0);
  EXPECT_NEAR(a.cosine, 1, 1e-12);
  ASSERT_TRUE(a.top1_agreement.has_value());
  EXPECT_DOUBLE_EQ(*a.top1_agreement, 1);
}

TEST(AccuracyTest, MeasuresTheErrorOfAPerturbedOutput) {
  const auto x = torch::ones({2, 3});
  auto y = x.clone();
  y[0][0] = 1.5;
  const Accuracy a = compare_outputs({x}, {y});
  EXPECT_DOUBLE_EQ(a.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(a.max_rel_error, 0.5);
  EXPECT_LT(a.cosine, 1);
}

TEST(AccuracyTest, CountsTopOneDisagreements) {
  const auto ref = torch::tensor({{1.0, 0.0}, {0.0, 1.0}});
  const auto cand = torch::tensor({{1.0, 0.0}, {1.0, 0.0}});
  EXPECT_DOUBLE_EQ(*compare_outputs({ref}, {cand}).top1_agreement, 0.5);
}

TEST(AccuracyTest, FlagsNanAndInf) {
  auto y = torch::ones({3});
  y[1] = std::numeric_limits<float>::quiet_NaN();
  y[2] = std::numeric_limits<float>::infinity();
  const Accuracy a = compare_outputs({torch::ones({3})}, {y});
  EXPECT_EQ(a.nonfinite_values, 2);
  EXPECT_TRUE(std::isnan(a.cosine));
}

TEST(AccuracyTest, DifferentShapesAreNotComparable) {
  const Accuracy a = compare_outputs({torch::ones({2, 3})}, {torch::ones({3, 2})});
  EXPECT_FALSE(a.comparable);
  EXPECT_NE(a.note.find("shape"), std::string::npos);
  EXPECT_FALSE(compare_outputs({torch::ones({1})}, {}).comparable);
}

TEST(AccuracyTest, FlattensNestedDictsAndTuplesInOrder) {
  auto model = open_model(testing::fixture("structured_output.pt"))->load();
  const auto out = flatten_output(model->forward({torch::ones({2, 3})}));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_DOUBLE_EQ(out[0].sum().item<double>(), 12);  // x * 2
  EXPECT_DOUBLE_EQ(out[1].sum().item<double>(), 12);  // x + 1
  EXPECT_EQ(out[2].sizes(), (std::vector<std::int64_t>{2}));
}

}  // namespace torchperf
