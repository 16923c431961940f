#include "torchperf/models/workload.h"

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/feed/inputs.h"

namespace torchperf {
namespace {

Workload builtin_workload(const std::string& name) {
  Workload w;
  w.model = open_model("builtin:" + name)->load();
  w.inputs = make_inputs(find_builtin(name).default_inputs, 1, 0);
  return w;
}

}  // namespace

TEST(WorkloadTest, AConvnetFedImagesIsConvolutional) {
  Workload w = builtin_workload("resnet18");
  const WorkloadTraits t = describe_workload(w, false);
  EXPECT_TRUE(t.torchscript);
  EXPECT_TRUE(t.convolutional);
  EXPECT_TRUE(t.image_input);
  EXPECT_FALSE(t.saved_training);
  EXPECT_FALSE(t.cuda);
}

TEST(WorkloadTest, AnMlpIsNotConvolutional) {
  Workload w = builtin_workload("mlp");
  const WorkloadTraits t = describe_workload(w, false);
  EXPECT_FALSE(t.convolutional);
  EXPECT_FALSE(t.image_input);
  EXPECT_TRUE(t.floating_input);
}

TEST(WorkloadTest, AnEncoderFedTokenIdsHasNoFloatingInput) {
  Workload w = builtin_workload("encoder");
  EXPECT_FALSE(describe_workload(w, false).floating_input);
}

TEST(WorkloadTest, InputsFromAFileFixTheBatch) {
  Workload w;
  w.model = open_model(testing::fixture("resnet18_scripted.pt"))->load();
  w.inputs = load_inputs_file(testing::fixture("inputs_image.pt"));
  const WorkloadTraits t = describe_workload(w, true);
  EXPECT_TRUE(t.inputs_from_file);
  EXPECT_EQ(t.default_batch, 2);
}

TEST(WorkloadTest, SeesTheThreadsAndCoresOfThisProcess) {
  Workload w = builtin_workload("mlp");
  const WorkloadTraits t = describe_workload(w, false);
  EXPECT_GE(t.usable_cores, 1);
  EXPECT_GE(t.default_threads, 1);
}

}  // namespace torchperf
