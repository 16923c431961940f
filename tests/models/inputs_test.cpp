#include "torchperf/models/inputs.h"

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {

TEST(InputsTest, PrependsTheBatchDimension) {
  const auto inputs = make_inputs(parse_input_spec("3x8x8;int64:5@0..7"), 4, 0);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].toTensor().sizes(), (std::vector<std::int64_t>{4, 3, 8, 8}));
  EXPECT_EQ(inputs[1].toTensor().scalar_type(), at::kLong);
  EXPECT_GE(inputs[1].toTensor().min().item<std::int64_t>(), 0);
  EXPECT_LT(inputs[1].toTensor().max().item<std::int64_t>(), 7);
}

TEST(InputsTest, TheSameSeedGivesTheSameData) {
  const auto spec = parse_input_spec("16");
  EXPECT_TRUE(
      at::equal(make_inputs(spec, 2, 3)[0].toTensor(), make_inputs(spec, 2, 3)[0].toTensor()));
  EXPECT_FALSE(
      at::equal(make_inputs(spec, 2, 3)[0].toTensor(), make_inputs(spec, 2, 4)[0].toTensor()));
}

TEST(InputsTest, RejectsANonPositiveBatch) {
  EXPECT_THROW(make_inputs(parse_input_spec("4"), 0, 0), UsageError);
}

TEST(InputsTest, LoadsATensorSavedFromPython) {
  const auto inputs = load_inputs_file(testing::fixture("inputs_image.pt"));
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].toTensor().sizes(), (std::vector<std::int64_t>{2, 3, 224, 224}));
}

TEST(InputsTest, LoadsATupleOfTensorsSavedFromPython) {
  EXPECT_EQ(load_inputs_file(testing::fixture("inputs_pair.pt")).size(), 2u);
}

TEST(InputsTest, RefusesFilesThatHoldNoTensors) {
  EXPECT_THROW(load_inputs_file(testing::fixture("inputs_dict.pt")), ModelError);
  EXPECT_THROW(load_inputs_file(testing::fixture("not_a_model.txt")), ModelError);
  EXPECT_THROW(load_inputs_file("/nonexistent.pt"), ModelError);
}

TEST(InputsTest, DescribesShapesAndDtypes) {
  const auto inputs = make_inputs(parse_input_spec("3x2;int64:4"), 2, 0);
  EXPECT_EQ(describe_inputs(inputs), "Float[2,3,2]; Long[2,4]");
}

}  // namespace torchperf
