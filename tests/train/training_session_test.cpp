#include "torchperf/train/training_session.h"

#include <gtest/gtest.h>

#include <numeric>

#include <torch/utils.h>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

using testing::fixture;

TrainingContext context(const std::string& model, const std::string& data = "synthetic-cifar") {
  TrainingSpec spec;
  spec.model = model;
  spec.data = DataSpec::parse(data);
  spec.data.image_size = 16;
  return TrainingContext::open(spec);
}

TEST(TrainingSessionTest, PhasesOfAStepAddUpToItsWallTime) {
  const TrainingContext c = context(fixture("tiny_cnn.pt"));
  TrainingSession s(c, Configuration::parse("batch=4"));
  s.step();
  const StepTimes t = s.step();
  const double sum = std::accumulate(t.ns.begin(), t.ns.end(), 0.0);
  EXPECT_NEAR(sum, t.total_ns, 0.01 * t.total_ns);
  EXPECT_EQ(t.samples, 4);
  EXPECT_GT(t.ns[static_cast<std::size_t>(Phase::kBackward)], 0);
}

TEST(TrainingSessionTest, StepsAreTimedOnTheContextsClock) {
  TrainingContext c = context(fixture("tiny_cnn.pt"));
  c.clock = std::make_shared<ManualTimeSource>();  // never advanced: every phase takes 0 ns
  TrainingSession s(c, Configuration::parse("batch=4"));
  const StepTimes t = s.step();
  EXPECT_EQ(t.total_ns, 0);
  for (double ns : t.ns) EXPECT_EQ(ns, 0);
}

TEST(TrainingSessionTest, TrainingChangesTheWeightsAndLowersTheLossOnFixedData) {
  const TrainingContext c = context(fixture("regressor.pt"), "tensors:" + fixture("regression.pt"));
  TrainingSession s(c, Configuration::parse("batch=64"));
  const double first = s.step().loss;
  double last = first;
  for (int i = 0; i < 20; ++i) last = s.step().loss;
  EXPECT_LT(last, first);
}

TEST(TrainingSessionTest, RunReportsABreakdownWithMemory) {
  const TrainingContext c = context(fixture("tiny_cnn.pt"));
  TrainingSession s(c, Configuration::parse("batch=4,workers=1,zero_grad=set_to_none"));
  const Breakdown b = s.run(1, 3);
  EXPECT_EQ(b.steps, 3u);
  EXPECT_GT(b.samples_per_second, 0);
  EXPECT_GT(b.peak_memory_bytes, 0);
}

TEST(TrainingSessionTest, AnOutputThatDoesNotFitTheLossNamesBothShapes) {
  const TrainingContext c = context(fixture("tiny_cnn_3.pt"));
  TrainingSession s(c, Configuration::parse("batch=4"));
  try {
    s.step();
    FAIL() << "expected WorkloadError";
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("[4, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("10 classes"), std::string::npos) << e.what();
  }
}

TEST(TrainingSessionTest, ANanLossNamesItsStep) {
  const TrainingContext c = context(fixture("diverges.pt"));
  TrainingSession s(c, Configuration::parse("batch=4"));
  s.step();
  s.step();
  try {
    s.step();
    FAIL() << "expected TrainingDiverged";
  } catch (const TrainingDiverged& e) {
    EXPECT_NE(std::string(e.what()).find("at step 3"), std::string::npos) << e.what();
  }
}

TEST(TrainingSessionTest, WithAGradScalerANonFiniteStepIsSkippedAndTrainingGoesOn) {
  TrainingSpec spec;
  spec.model = fixture("diverges.pt");
  spec.data.image_size = 8;
  spec.grad_scaler = "on";
  const TrainingContext c = TrainingContext::open(spec);
  TrainingSession s(c, Configuration::parse("batch=4"));
  EXPECT_TRUE(s.step().stepped);
  EXPECT_TRUE(s.step().stepped);
  EXPECT_FALSE(s.step().stepped);
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(TrainingSessionTest, InferenceKnobsAndKnobsThatDoNotApplyAreRefused) {
  const TrainingContext c = context(fixture("tiny_cnn.pt"));
  EXPECT_THROW(TrainingSession(c, Configuration::parse("grad=no_grad")), ConfigError);
  EXPECT_THROW(TrainingSession(c, Configuration::parse("pin_memory=on")), ConfigError);
  const TrainingContext tensors = context(fixture("regressor.pt"), "tensors:" + fixture("regression.pt"));
  EXPECT_THROW(TrainingSession(tensors, Configuration::parse("transfer=uint8")), ConfigError);
}

TEST(TrainingSessionTest, Bf16AmpAndChannelsLastTrain) {
  const TrainingContext c = context(fixture("tiny_cnn.pt"));
  TrainingSession s(c, Configuration::parse("batch=4,amp=bf16,format=channels_last,transfer=uint8"));
  EXPECT_TRUE(std::isfinite(s.step().loss));
}

TEST(TrainingSessionTest, ThePlainExecutorLearnsWhatTheOptimizedOneLearns) {
  // Op by op or through differentiable subgraphs: the same arithmetic, so the same losses.
  const TrainingContext c = context(fixture("tiny_cnn.pt"));
  auto losses = [&](const std::string& executor) {
    torch::manual_seed(7);  // the same shuffled order on both sides
    TrainingSession s(c, Configuration::parse("batch=4,executor=" + executor));
    const ScopeExit restore(s.enter());
    std::vector<double> out;
    for (int i = 0; i < 4; ++i) out.push_back(s.step().loss);
    return out;
  };
  const auto optimized = losses("optimized");
  const auto plain = losses("plain");
  ASSERT_EQ(optimized.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(plain[i], optimized[i], 1e-4) << i;
}

}  // namespace
}  // namespace torchperf
