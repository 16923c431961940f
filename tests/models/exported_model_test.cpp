#include "torchperf/models/exported_model.h"

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/error.h"
#include "torchperf/models/accuracy.h"
#include "torchperf/feed/inputs.h"

namespace torchperf {

using testing::fixture;

TEST(ExportedModelTest, RunsItsPackageAtAnyBatchInItsRangeAsPyTorchRunsTheProgram) {
  auto source = open_model(fixture("mlp_dynamic.pt2"));
  auto model = source->load();
  auto* program = model->as_exported();
  ASSERT_NE(program, nullptr);
  EXPECT_THROW(program->forward({}), RuntimeFailure);  // not compiled yet
  program->compile(false);
  ASSERT_TRUE(program->compiled());
  EXPECT_TRUE(program->compiled()->cache_hit);  // fixtures.aoti compiled it
  for (const std::int64_t batch : {3, 17}) {
    const auto inputs = make_inputs(*source->default_inputs(), batch, 7);
    const auto got = flatten_output(program->forward(inputs));
    std::uint64_t flops = 0;
    const auto want = program->eager_outputs(inputs, &flops);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(want.size(), 1u);
    EXPECT_EQ(got[0].sizes(), want[0].sizes());
    EXPECT_TRUE(got[0].allclose(want[0], 1e-4, 1e-5)) << "batch " << batch;
    // PyTorch's count: two Linear layers, 2 * (32*64 + 64*16) per sample.
    EXPECT_EQ(flops, static_cast<std::uint64_t>(batch) * 2 * (32 * 64 + 64 * 16));
  }
}

TEST(ExportedModelTest, KeepsItsExportedModeAndCompilesInFp32OrBf16Only) {
  auto model = open_model(fixture("mlp_dynamic.pt2"))->load();
  EXPECT_NO_THROW(model->set_training(false));
  EXPECT_THROW(model->set_training(true), ConfigError);
  EXPECT_NO_THROW(model->to(at::kBFloat16));
  EXPECT_THROW(model->to(at::kHalf), ConfigError);
}

TEST(ExportedModelTest, AProgramThatRejectsItsInputsIsAWorkloadErrorNamingTheShapes) {
  auto model = open_model(fixture("exported.pt2"))->load();  // a static batch of 2
  try {
    model->as_exported()->eager_outputs(make_inputs(parse_input_spec("32"), 5, 0), nullptr);
    FAIL() << "no error";
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("float32[5, 32]"), std::string::npos) << e.what();
  }
}

}  // namespace torchperf
