#include "torchperf/train/advice.h"

#include <gtest/gtest.h>

#include <optional>

namespace torchperf {
namespace {

Breakdown with_shares(double wait, double copy, double compute, double memory = 0.1) {
  Breakdown b;
  b.share[static_cast<std::size_t>(Phase::kDataWait)] = wait;
  b.share[static_cast<std::size_t>(Phase::kCopy)] = copy;
  b.share[static_cast<std::size_t>(Phase::kForward)] = compute;
  b.utilisation = compute;
  b.step_ns = 100e6;
  b.peak_memory_bytes = static_cast<std::int64_t>(memory * 1000);
  b.memory_capacity_bytes = 1000;
  return b;
}

// By value: the advice list is often a temporary that dies at the end of the statement.
std::optional<Advice> find(const std::vector<Advice>& advice, const std::string& knob) {
  for (const auto& a : advice)
    if (a.knob == knob) return a;
  return std::nullopt;
}

AdviceContext cpu(int cores = 2) {
  AdviceContext c;
  c.usable_cores = cores;
  c.uint8_data = true;
  c.plan.threads = cores;
  return c;
}

TEST(AdviceTest, DataWaitAboveFivePercentAsksForAnotherLoaderThreadFirst) {
  // Memory at 60% leaves no room for a bigger batch, so no other rule competes.
  const auto advice = advise(with_shares(0.40, 0, 0.6, 0.6), cpu());
  ASSERT_FALSE(advice.empty());
  EXPECT_EQ(advice.front().knob, "workers");
  EXPECT_EQ(advice.front().value, "1");
  EXPECT_NE(advice.front().evidence.find("40.0%"), std::string::npos);
  EXPECT_NE(advice.front().evidence.find("threshold 2.0%"), std::string::npos);  // workers=0
}

TEST(AdviceTest, DataWaitBelowTheThresholdAsksForNothingAboutData) {
  AdviceContext c = cpu();
  c.plan.workers = 1;
  for (const auto& a : advise(with_shares(0.04, 0, 0.96), c)) EXPECT_NE(a.rule, "data-wait") << a.message;
  c.plan.workers = 0;
  for (const auto& a : advise(with_shares(0.015, 0, 0.985), c))
    EXPECT_NE(a.rule, "data-wait") << a.message;
}

TEST(AdviceTest, BatchesMadeInTheTrainingThreadAskForALoaderThreadFromTwoPercent) {
  const auto workers = find(advise(with_shares(0.03, 0, 0.97), cpu()), "workers");
  ASSERT_TRUE(workers.has_value());
  EXPECT_EQ(workers->value, "1");
  EXPECT_NE(workers->evidence.find("made in the training thread"), std::string::npos);
}

TEST(AdviceTest, WithEveryCoreAlreadyLoadingItAsksForDeeperPrefetch) {
  AdviceContext c = cpu();
  c.plan.workers = 2;
  EXPECT_EQ(find(advise(with_shares(0.3, 0, 0.7), c), "prefetch").value().value, "4");
}

TEST(AdviceTest, ReducedPrecisionHardwareUnusedAsksForAmpAsASemanticChange) {
  AdviceContext c = cpu();
  c.reduced_precision_hardware = true;
  c.reduced_precision_evidence = "the CPU has amx_bf16";
  const auto amp = find(advise(with_shares(0, 0, 1), c), "amp");
  ASSERT_TRUE(amp.has_value());
  EXPECT_EQ(amp->value, "bf16");
  EXPECT_TRUE(amp->changes_training);
  c.reduced_precision_hardware = false;
  EXPECT_FALSE(find(advise(with_shares(0, 0, 1), c), "amp").has_value());
}

TEST(AdviceTest, MemoryAboveNinetyPercentAsksForCheckpointingOrAmp) {
  AdviceContext c = cpu();
  bool found = false;
  for (const auto& a : advise(with_shares(0, 0, 1, 0.95), c))
    if (a.rule == "memory") {
      found = true;
      EXPECT_NE(a.message.find("checkpointing"), std::string::npos);
    }
  EXPECT_TRUE(found);
}

TEST(AdviceTest, LowUtilisationWithRoomInMemoryAsksForABiggerBatch) {
  const auto batch = find(advise(with_shares(0.02, 0.02, 0.5), cpu()), "batch");
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->value, "64");
  EXPECT_TRUE(batch->changes_training);
}

TEST(AdviceTest, OnCudaACopyBottleneckAsksForPinnedMemoryAndNonBlockingTogether) {
  AdviceContext c = cpu();
  c.cuda = true;
  const auto pin = find(advise(with_shares(0, 0.3, 0.7), c), "pin_memory");
  ASSERT_TRUE(pin.has_value());
  EXPECT_EQ(pin->value, "on");
  EXPECT_EQ(pin->with, (std::vector<std::pair<std::string, std::string>>{{"non_blocking", "on"}}));
  EXPECT_EQ(find(advise(with_shares(0, 0.3, 0.7), c), "transfer").value().value, "uint8");
  c.plan.pin_memory = c.plan.non_blocking = true;
  EXPECT_FALSE(find(advise(with_shares(0, 0.3, 0.7), c), "pin_memory").has_value());
}

TEST(AdviceTest, LoaderThreadsAreSizedToTheMachineDoublingUpToItsCores) {
  const auto sixteen = find(advise(with_shares(0.5, 0, 0.5, 0.6), cpu(16)), "workers");
  ASSERT_TRUE(sixteen.has_value());
  EXPECT_EQ(sixteen->value, "1");
  EXPECT_EQ(sixteen->larger, (std::vector<std::string>{"2", "4", "8", "16"}));
  AdviceContext six = cpu(6);
  six.plan.workers = 2;
  const auto from_two = find(advise(with_shares(0.5, 0, 0.5, 0.6), six), "workers");
  ASSERT_TRUE(from_two.has_value());
  EXPECT_EQ(from_two->value, "4");
  EXPECT_EQ(from_two->larger, (std::vector<std::string>{"6"}));
  // With loader threads already at work, deeper prefetch is advised beside more of them.
  EXPECT_TRUE(find(advise(with_shares(0.5, 0, 0.5, 0.6), six), "prefetch").has_value());
}

TEST(AdviceTest, LargerBatchesAreTheOnesThatFitInMemory) {
  // Peak memory 10% of capacity: 2x, 4x and 8x stay under 90%, 16x would not.
  const auto batch = find(advise(with_shares(0.02, 0.02, 0.5, 0.1), cpu()), "batch");
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->value, "64");
  EXPECT_EQ(batch->larger, (std::vector<std::string>{"128", "256"}));
}

TEST(AdviceTest, AmpOnCudaIsBf16WhereTheDeviceHasItElseFp16) {
  AdviceContext c = cpu();
  c.cuda = c.reduced_precision_hardware = true;
  EXPECT_EQ(find(advise(with_shares(0, 0, 1), c), "amp").value().value, "fp16");
  c.bf16 = true;
  EXPECT_EQ(find(advise(with_shares(0, 0, 1), c), "amp").value().value, "bf16");
}

TEST(AdviceTest, CompileIsAlsoProposedWithTheLayoutAndPrecisionItFuses) {
  AdviceContext c = cpu();
  c.python_definition = c.convolutional = c.reduced_precision_hardware = c.bf16 = true;
  std::vector<std::string> changes;
  std::vector<bool> semantic;
  for (const auto& a : advise(with_shares(0, 0, 0.9), c))
    if (a.knob == "step") {
      changes.push_back(change_of(a));
      semantic.push_back(a.changes_training);
    }
  EXPECT_EQ(changes, (std::vector<std::string>{"step=compile", "step=compile,format=channels_last",
                                               "step=compile,format=channels_last,amp=bf16"}));
  EXPECT_EQ(semantic, (std::vector<bool>{false, false, true}));  // AMP changes what is learned
}

TEST(AdviceTest, AModelDefinedInPythonIsAskedToCompileItsStepThenOnCudaItsModes) {
  AdviceContext c = cpu();
  EXPECT_FALSE(find(advise(with_shares(0, 0, 0.9), c), "step").has_value());
  c.python_definition = true;
  const auto compile = find(advise(with_shares(0, 0, 0.9), c), "step");
  ASSERT_TRUE(compile.has_value());
  EXPECT_EQ(compile->value, "compile");
  EXPECT_FALSE(compile->changes_training);
  c.plan.runtime = &runtime_for_step("compile");
  c.plan.step = "compile";
  EXPECT_FALSE(find(advise(with_shares(0, 0, 0.9), c), "step").has_value());  // no CUDA graphs on a CPU
  c.cuda = true;
  std::vector<std::string> modes;
  for (const auto& a : advise(with_shares(0, 0, 0.9), c))
    if (a.knob == "step") modes.push_back(a.value);
  EXPECT_EQ(modes, (std::vector<std::string>{"compile-reduce-overhead", "compile-max-autotune"}));
}

TEST(AdviceTest, AComputeBoundTorchScriptModelOnTheCpuIsAskedToRunItsGraphOpByOp) {
  AdviceContext c = cpu();
  c.torchscript = true;
  const auto executor = find(advise(with_shares(0, 0, 0.9), c), "executor");
  ASSERT_TRUE(executor.has_value());
  EXPECT_EQ(executor->value, "plain");
  EXPECT_FALSE(executor->changes_training);  // the same gradients, computed op by op
  c.plan.optimized_executor = false;
  EXPECT_FALSE(find(advise(with_shares(0, 0, 0.9), c), "executor").has_value());
}

TEST(AdviceTest, TheExecutorIsLeftAloneOnCudaWhereTheJitFusesAndForEagerModels) {
  AdviceContext c = cpu();
  c.torchscript = true;
  c.cuda = true;
  EXPECT_FALSE(find(advise(with_shares(0, 0, 0.9), c), "executor").has_value());
  c = cpu();
  EXPECT_FALSE(find(advise(with_shares(0, 0, 0.9), c), "executor").has_value());
}

AdviceContext ranks(int world, int accumulate = 1) {
  AdviceContext c = cpu(1);
  c.world_size = world;
  c.plan.accumulate = accumulate;
  return c;
}

Breakdown with_all_reduce(double exposed) {
  Breakdown b = with_shares(0, 0, 0.95 - exposed, 0.6);
  b.share[static_cast<std::size_t>(Phase::kAllReduce)] = exposed;
  return b;
}

TEST(AdviceTest, AnExposedAllReduceWhileAccumulatingAsksForNoSyncFirst) {
  const auto advice = advise(with_all_reduce(0.5), ranks(2, 4));
  ASSERT_FALSE(advice.empty());
  EXPECT_EQ(advice.front().knob, "no_sync");
  EXPECT_EQ(advice.front().value, "on");
  EXPECT_FALSE(advice.front().changes_training);
  EXPECT_NE(advice.front().evidence.find("50.0% of the 100.0 ms step"), std::string::npos);
  EXPECT_DOUBLE_EQ(advice.front().weight, 0.5 * 3 / 4);
  // And the buckets: views, larger, smaller, a static graph.
  EXPECT_EQ(find(advice, "gradient_as_bucket_view")->value, "on");
  EXPECT_EQ(find(advice, "ddp_bucket_mb")->value, "100");
  EXPECT_TRUE(find(advice, "static_graph"));
}

TEST(AdviceTest, NoSyncIsNotAskedForWithoutAccumulationOrWithAStaticGraph) {
  EXPECT_FALSE(find(advise(with_all_reduce(0.5), ranks(2, 1)), "no_sync"));
  AdviceContext c = ranks(2, 4);
  c.plan.ddp.static_graph = true;
  EXPECT_FALSE(find(advise(with_all_reduce(0.5), c), "no_sync"));
}

TEST(AdviceTest, OneProcessOrAHiddenAllReduceAsksNothingOfDdp) {
  for (const auto& a : advise(with_all_reduce(0.5), ranks(1, 4))) EXPECT_NE(a.rule, "all-reduce");
  for (const auto& a : advise(with_all_reduce(0.02), ranks(2, 4))) EXPECT_NE(a.rule, "all-reduce");
}

TEST(AdviceTest, FindingUnusedParametersWhereEveryOneHasAGradientIsACost) {
  AdviceContext c = ranks(2);
  c.plan.ddp.find_unused_parameters = "on";
  Breakdown b = with_all_reduce(0);
  b.unused_parameters = 0;
  EXPECT_EQ(find(advise(b, c), "find_unused_parameters")->value, "auto");
  b.unused_parameters = 3;
  EXPECT_FALSE(find(advise(b, c), "find_unused_parameters"));
}

TEST(AdviceTest, ARankWhoseOwnWorkLagsTheMedianIsNamedAsAStraggler) {
  Breakdown b = with_all_reduce(0.1);
  b.ranks = {RankBreakdown{}, RankBreakdown{}};
  b.ranks[0].busy_ns = 60e6;
  b.ranks[1].rank = 1;
  b.ranks[1].busy_ns = 90e6;
  b.straggler_gap_ns = straggler_gap_ns(b.ranks);
  bool named = false;
  for (const auto& a : advise(b, ranks(2)))
    if (a.rule == "straggler") {
      named = true;
      EXPECT_TRUE(a.knob.empty());
      EXPECT_NE(a.evidence.find("rank 1's own work is 15.0 ms longer"), std::string::npos)
          << a.evidence;
    }
  EXPECT_TRUE(named);
}

// The step at batch 4 with a 1000-byte cap: 600 bytes at peak, 200 of them activations (40
// checkpointed). The ladder plans up to 90% of the cap (900 bytes).
Breakdown capped(double compute = 0.99) {
  Breakdown b = with_shares(0.005, 0, compute, 0.6);
  b.activation_bytes = 200;
  b.checkpointed_activation_bytes = 40;
  return b;
}

AdviceContext python_step(long long batch) {
  AdviceContext c = cpu();
  c.python_definition = true;
  c.plan.batch = batch;
  return c;
}

TEST(AdviceTest, UnderACapABatchIsPlannedFromItsActivationsAndOneThatWouldNotFitIsNotTried) {
  // Batch 8 needs 800 bytes, 16 would need 1200: only 8 is advised.
  const auto a = find(advise(capped(0.5), python_step(4)), "batch");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rule, "utilisation");
  EXPECT_EQ(a->value, "8");
  EXPECT_TRUE(a->larger.empty());
}

TEST(AdviceTest, ABatchCappedByMemoryIsTriedCheckpointedWithTheLargerBatchItFits) {
  Breakdown b = capped();
  b.peak_memory_bytes = 850;  // batch 8 would need 1050: over the 900 planned
  const auto advice = advise(b, python_step(4));
  const auto a = find(advice, "batch");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rule, "memory");
  EXPECT_TRUE(a->changes_training);
  // Checkpointed, k times the batch needs 650 + 40 k: 8 (730) and 16 (810) fit, 32 (970) not.
  EXPECT_EQ(a->value, "8");
  EXPECT_EQ(a->larger, std::vector<std::string>{"16"});
  ASSERT_EQ(a->with.size(), 2u);  // the Python step's: checkpointing wraps Python modules
  EXPECT_EQ(a->with[0], (std::pair<std::string, std::string>{"checkpoint", "blocks"}));
  EXPECT_NE(a->evidence.find("batch 8 would need"), std::string::npos) << a->evidence;
  EXPECT_NE(a->evidence.find("(not tried)"), std::string::npos);
}

TEST(AdviceTest, NoCheckpointingIsAdvisedWhereTheBatchFitsOrTheModelHasNoPythonDefinition) {
  EXPECT_FALSE(find(advise(capped(), python_step(4)), "batch"));  // 8 fits: no cap binds
  Breakdown b = capped();
  b.peak_memory_bytes = 850;
  AdviceContext c = python_step(4);
  c.python_definition = false;
  EXPECT_FALSE(find(advise(b, c), "batch"));
}

TEST(AdviceTest, AdviceComesLargestShareFirst) {
  // Pushed in rule order: data wait (0.1), transfer (0.09), then utilisation (1 - 0.5).
  const auto advice = advise(with_shares(0.1, 0, 0.5), cpu());
  ASSERT_GE(advice.size(), 3u);
  EXPECT_EQ(advice.front().rule, "utilisation");
  for (std::size_t i = 1; i < advice.size(); ++i)
    EXPECT_GE(advice[i - 1].weight, advice[i].weight);
}

}  // namespace
}  // namespace torchperf
