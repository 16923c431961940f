#include "torchperf/config/apply.h"

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/models/accuracy.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/feed/inputs.h"

namespace torchperf {
namespace {

struct Prepared {
  Workload workload;
  ResolvedConfiguration config;
};

Prepared prepare(const std::string& model, const std::string& config) {
  Prepared p;
  p.workload.model = open_model("builtin:" + model)->load();
  p.workload.spec = find_builtin(model).default_inputs;
  p.workload.inputs = make_inputs(*p.workload.spec, 1, 0);
  p.config = resolve(Configuration::parse(config), describe_workload(p.workload, false));
  prepare_workload(p.config, p.workload);
  return p;
}

}  // namespace

TEST(ApplyTest, BatchRemakesTheInputs) {
  const auto p = prepare("mlp", "batch=5");
  EXPECT_EQ(p.workload.inputs[0].toTensor().size(0), 5);
}

TEST(ApplyTest, AStreamsPolicyIsReadFromTheConfigurationOnceAndNoKnobWritesItIntoTheWorkload) {
  WorkloadTraits varying;
  varying.named_dims = {"S"};
  varying.dynamic_batch = true;
  varying.batch_max = 64;
  const auto config =
      resolve(Configuration::parse("batch=4,padding=buckets:8/16,batching=sorted:64"), varying);
  StreamPolicy design;
  design.batch = 16;
  const StreamPolicy policy = stream_policy_of(config, design);
  EXPECT_EQ(policy.batch, 4);
  EXPECT_EQ(policy.padding.kind, PaddingPolicy::Kind::kBuckets);
  EXPECT_EQ(policy.padding.edges, (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(policy.batching.window, 64);
  // Where no length varies the stream's knobs do not apply: the given policy stands.
  WorkloadTraits fixed = varying;
  fixed.named_dims.clear();
  const StreamPolicy kept = stream_policy_of(resolve(Configuration::parse("batch=4"), fixed), design);
  EXPECT_EQ(kept.batch, 4);
  EXPECT_EQ(kept.padding.kind, PaddingPolicy::Kind::kBatchMax);
  EXPECT_EQ(kept.batching.window, 0);
}

TEST(ApplyTest, ChannelsLastConvertsWeightsAndInputsTogether) {
  auto p = prepare("resnet18", "format=channels_last");
  EXPECT_TRUE(p.workload.inputs[0].toTensor().is_contiguous(at::MemoryFormat::ChannelsLast));
  for (const auto& param : p.workload.model->as_torchscript()->module().parameters()) {
    if (param.dim() == 4) {
      EXPECT_TRUE(param.is_contiguous(at::MemoryFormat::ChannelsLast));
    }
  }
}

TEST(ApplyTest, Bf16ConvertsWeightsAndFloatingInputsButNotTokenIds) {
  auto p = prepare("encoder", "precision=bf16");
  EXPECT_EQ(p.workload.inputs[0].toTensor().scalar_type(), at::kLong);
  for (const auto& param : p.workload.model->as_torchscript()->module().parameters())
    EXPECT_EQ(param.scalar_type(), at::kBFloat16);
  auto q = prepare("mlp", "precision=bf16");
  EXPECT_EQ(q.workload.inputs[0].toTensor().scalar_type(), at::kBFloat16);
}

TEST(ApplyTest, FreezingTurnsParametersIntoConstants) {
  auto p = prepare("resnet18", "graph=frozen");
  EXPECT_TRUE(p.workload.model->as_torchscript()->module().parameters().size() == 0);
  auto q = prepare("resnet18", "graph=frozen-opt");
  EXPECT_FALSE(q.workload.model->as_torchscript()->uses_operator("aten::batch_norm"));
  torch::NoGradGuard no_grad;
  EXPECT_EQ(flatten_output(q.workload.model->forward(q.workload.inputs)).size(), 1u);
}

TEST(ApplyTest, ScopesAreEnteredTogetherAndUndoneInReverse) {
  const int threads = at::get_num_threads();
  auto p = prepare("mlp",
                   "grad=inference,precision=bf16-autocast,threads=" + std::to_string(threads + 1));
  Undo process = enter_scope(p.config, p.workload, KnobScope::kProcess);
  EXPECT_EQ(at::get_num_threads(), threads + 1);
  Undo call = enter_scope(p.config, p.workload, KnobScope::kCall);
  EXPECT_TRUE(c10::InferenceMode::is_enabled());
  EXPECT_TRUE(compat::autocast_enabled(compat::DeviceKind::kCpu));
  EXPECT_EQ(at::get_num_threads(), threads + 1);  // call scope leaves process state alone
  call();
  EXPECT_FALSE(c10::InferenceMode::is_enabled());
  EXPECT_FALSE(compat::autocast_enabled(compat::DeviceKind::kCpu));
  process();
  EXPECT_EQ(at::get_num_threads(), threads);
}

TEST(ApplyTest, TrainModeIsAppliedToTheModel) {
  auto p = prepare("mlp", "mode=train");
  EXPECT_TRUE(p.workload.model->is_training());
}

}  // namespace torchperf
