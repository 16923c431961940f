#include "torchperf/config/knob.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/error.h"
#include "torchperf/models/workload.h"

namespace torchperf {
namespace {

Workload cpu_workload() {
  Workload w;
  w.device = c10::kCPU;
  return w;
}

}  // namespace

TEST(KnobRegistryTest, EveryKnobIsFullyDeclaredOnce) {
  std::set<std::string> names;
  for (const auto& k : knob_registry()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name << " declared twice";
    EXPECT_FALSE(k.description.empty()) << k.name;
    ASSERT_TRUE(k.values && k.baseline && k.applies) << k.name;
    EXPECT_FALSE(all_values(k).empty()) << k.name;
  }
  for (const char* expected : {"threads", "batch", "mode", "grad", "precision", "format", "graph",
                               "cudnn_benchmark", "tf32"})
    EXPECT_TRUE(names.count(expected)) << expected;
}

TEST(KnobRegistryTest, EveryBaselineIsOneOfTheKnobsValues) {
  WorkloadTraits t;
  t.cuda = true;
  for (const auto& k : knob_registry()) {
    if (k.integer_valued) continue;
    const auto values = k.values(t);
    EXPECT_NE(std::find(values.begin(), values.end(), k.baseline(t)), values.end()) << k.name;
  }
}

TEST(KnobRegistryTest, UnknownKnobsAreRefusedWithTheKnownList) {
  EXPECT_THROW(find_knob("turbo"), ConfigError);
  EXPECT_EQ(find_knob("graph").name, "graph");
}

TEST(KnobRegistryTest, ThreadsAreSetForABlockAndRestored) {
  const int before = at::get_num_threads();
  const Workload w = cpu_workload();
  Undo undo = find_knob("threads").enter(std::to_string(before + 1), w);
  EXPECT_EQ(at::get_num_threads(), before + 1);
  undo();
  EXPECT_EQ(at::get_num_threads(), before);
}

TEST(KnobRegistryTest, GradModesAreEnteredAndUndone) {
  const Workload w = cpu_workload();
  ASSERT_TRUE(c10::GradMode::is_enabled());
  Undo no_grad = find_knob("grad").enter("no_grad", w);
  EXPECT_FALSE(c10::GradMode::is_enabled());
  no_grad();
  EXPECT_TRUE(c10::GradMode::is_enabled());
  Undo inference = find_knob("grad").enter("inference", w);
  EXPECT_TRUE(c10::InferenceMode::is_enabled());
  inference();
  EXPECT_FALSE(c10::InferenceMode::is_enabled());
}

TEST(KnobRegistryTest, AutocastIsOnOnlyWhileEntered) {
  const Workload w = cpu_workload();
  Undo undo = find_knob("precision").enter("bf16-autocast", w);
  EXPECT_TRUE(compat::autocast_enabled(compat::DeviceKind::kCpu));
  undo();
  EXPECT_FALSE(compat::autocast_enabled(compat::DeviceKind::kCpu));
}

TEST(KnobRegistryTest, TheFuserIsAllowedOnlyWhileEntered) {
  const Workload w = cpu_workload();
  compat::set_fuser_state({false, false});
  Undo undo = find_knob("graph").enter("fused", w);
  EXPECT_TRUE(compat::cpu_fusion_enabled());
  undo();
  EXPECT_FALSE(compat::fuser_state().cpu_fusion);
  EXPECT_FALSE(compat::fuser_state().texpr_fuser);
  compat::set_fuser_state({false, true});
}

TEST(KnobRegistryTest, ThePlainExecutorHoldsOnlyWhileEntered) {
  const Workload w = cpu_workload();
  ASSERT_TRUE(compat::graph_executor_optimize());
  {
    const ScopeExit undo(find_knob("executor").enter("plain", w));
    EXPECT_FALSE(compat::graph_executor_optimize());
  }
  EXPECT_TRUE(compat::graph_executor_optimize());
}

TEST(KnobRegistryTest, AutocastUndoRestoresAnEnclosingAutocast) {
  const Workload w = cpu_workload();
  compat::set_autocast(compat::DeviceKind::kCpu, true, "bfloat16");
  Undo undo = find_knob("precision").enter("bf16-autocast", w);
  undo();
  EXPECT_TRUE(compat::autocast_enabled(compat::DeviceKind::kCpu));
  compat::set_autocast(compat::DeviceKind::kCpu, false, "bfloat16");
}

TEST(KnobRegistryTest, FusionDoesNotApplyWhereTheFuserCannotCompileForCpu) {
  WorkloadTraits t;
  t.cpu_fuser = false;
  const Applicability a = find_knob("graph").applies(t, "fused");
  EXPECT_FALSE(a.applies);
  EXPECT_NE(a.reason.find("LLVM"), std::string::npos);
  EXPECT_TRUE(find_knob("graph").applies(t, "frozen-opt").applies);
}

TEST(KnobRegistryTest, PaddingAppliesOnlyToMultiplesTheHiddenSizesAreNotYet) {
  WorkloadTraits t;
  const Knob& pad = find_knob("pad");
  EXPECT_TRUE(pad.applies(t, "keep").applies);
  const Applicability none = pad.applies(t, "16");
  EXPECT_FALSE(none.applies);
  EXPECT_NE(none.reason.find("no Linear layer feeds another"), std::string::npos) << none.reason;
  t.hidden_linear_sizes = {304, 112};  // multiples of 16, not of 64
  const Applicability already = pad.applies(t, "16");
  EXPECT_FALSE(already.applies);
  EXPECT_NE(already.reason.find("multiples of 16 already"), std::string::npos) << already.reason;
  EXPECT_TRUE(pad.applies(t, "64").applies);
  EXPECT_FALSE(pad.swept_by_default(t));  // lint --fix tries each multiple; tune when asked
}

TEST(KnobRegistryTest, PaddingIsAppliedBeforeWeightsAreConvertedOrPacked) {
  const auto& r = knob_registry();
  const auto at = [&](const std::string& name) {
    return std::find_if(r.begin(), r.end(), [&](const Knob& k) { return k.name == name; }) -
           r.begin();
  };
  EXPECT_LT(at("pad"), at("precision"));
  EXPECT_LT(at("pad"), at("qengine"));
  EXPECT_LT(at("pad"), at("graph"));
}

TEST(KnobRegistryTest, CudaKnobsDoNotApplyOnCpu) {
  WorkloadTraits cpu;
  cpu.convolutional = true;
  EXPECT_FALSE(find_knob("cudnn_benchmark").applies(cpu, "on").applies);
  EXPECT_FALSE(find_knob("tf32").applies(cpu, "on").applies);
  EXPECT_FALSE(find_knob("precision").applies(cpu, "fp16-autocast").applies);
  EXPECT_TRUE(find_knob("precision").applies(cpu, "bf16-autocast").applies);
}

TEST(KnobRegistryTest, ThreadValuesForASweepCoverOneToAllCores) {
  WorkloadTraits t;
  t.usable_cores = 6;
  EXPECT_EQ(find_knob("threads").values(t), (std::vector<std::string>{"1", "2", "4", "6"}));
}

TEST(KnobRegistryTest, TheStreamsKnobsApplyOnlyWhereALengthVariesAndSayWhatTheCollateDoes) {
  const Knob& padding = find_knob("padding");
  WorkloadTraits fixed_shapes;
  EXPECT_FALSE(padding.applies(fixed_shapes, "max").applies);
  WorkloadTraits varying;
  varying.named_dims = {"S"};
  varying.suggested_buckets = "buckets:40/72/512";
  EXPECT_TRUE(padding.applies(varying, "buckets:40/72/512").applies);
  EXPECT_EQ(padding.expert(varying), std::vector<std::string>{"buckets:40/72/512"});
  EXPECT_NO_THROW(padding.check_form("buckets:8/16"));
  EXPECT_THROW(padding.check_form("pow2"), ConfigError);
  const KnobCode code = padding.code("buckets:40/72/512", false);
  ASSERT_EQ(code.python_setup.size(), 1u);
  EXPECT_NE(code.python_setup[0].find("the first of these edges that holds its longest sample: "
                                      "40/72/512"),
            std::string::npos)
      << code.python_setup[0];
  EXPECT_TRUE(find_knob("batching").code("arrival", false).python_setup.empty());
  EXPECT_NE(find_knob("batching").code("sorted:256", false).python_setup[0].find("window of 256"),
            std::string::npos);
}

}  // namespace torchperf
