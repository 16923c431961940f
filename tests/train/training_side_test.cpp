// A training session in a worker of its own (the real torchperf binary in its worker mode), as the
// ladder uses it when a change alters process state.
#include "torchperf/train/training_side.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/test_support.h"
#include "test_paths.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

TrainingSpec tiny_spec() {
  TrainingSpec s;
  s.model = testing::fixture("tiny_cnn.pt");
  s.data.source = "synthetic-cifar";
  s.data.image_size = 16;
  s.device = "cpu";
  return s;
}

class TrainingSideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("torchperf-ts-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  WorkerRun run() const {
    WorkerRun r;
    r.executable = TORCHPERF_TEST_CLI;
    r.log_dir = dir_.string();
    r.limits.time_limit_s = 120;
    return r;
  }
  std::filesystem::path dir_;
};

}  // namespace

TEST(TrainingSpecJsonTest, ASpecReadsBackAsItWasWritten) {
  TrainingSpec s = tiny_spec();
  s.optimizer = "adam";
  s.learning_rate = 0.003;
  s.data.strict = true;
  s.seed = 7;
  const TrainingSpec back = training_spec_from_json(to_json(s));
  EXPECT_EQ(to_json(back), to_json(s));
}

TEST(TrainingPlanTest, KnobsOfThePythonStepAndPairsPyTorchRefusesAreConfigErrors) {
  TrainingContext c;
  c.traits.python_definition = true;
  c.traits.world_size = 2;
  // The Python step: accumulation and checkpointing plan there.
  const TrainingPlan p = plan_of(c, Configuration::parse(
      "step=eager,accumulate=4,no_sync=on,checkpoint=every:2,ddp_bucket_mb=5,"
      "gradient_as_bucket_view=on,broadcast_buffers=off,find_unused_parameters=on"));
  EXPECT_EQ(p.accumulate, 4);
  EXPECT_TRUE(p.no_sync);
  EXPECT_EQ(p.checkpoint, "every:2");
  EXPECT_EQ(p.ddp.bucket_mb, 5);
  EXPECT_TRUE(p.ddp.gradient_as_bucket_view);
  EXPECT_FALSE(p.ddp.broadcast_buffers);
  EXPECT_EQ(p.ddp.find_unused_parameters, "on");
  auto refused = [&](const std::string& config, const std::string& why) {
    try {
      plan_of(c, Configuration::parse(config));
      ADD_FAILURE() << config << " was planned";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused("step=eager,checkpoint=budget:0.5", "the activation memory budget is torch.compile's");
  refused("step=eager,static_graph=on,no_sync=on,accumulate=2", "static_graph=on with no_sync=on");
  refused("checkpoint=every:0", "expected off, blocks, every:N");
  refused("step=torchscript", "DDP's ranks train in Python");
  // One process: DDP's knobs do not apply; accumulation does.
  c.traits.world_size = 1;
  refused("step=eager,ddp_bucket_mb=5", "DDP's settings apply to ranks");
  EXPECT_EQ(plan_of(c, Configuration::parse("step=eager,accumulate=2")).accumulate, 2);
  c.traits.torchscript_form = true;
  refused("step=torchscript,accumulate=2", "accumulate=2 runs in the Python step");
}

TEST_F(TrainingSideTest, ASideInItsOwnWorkerRunsBlocksOfStepsAtItsThreadCount) {
  HeadToHeadOptions o;
  o.steps = 2;
  Configuration config = Configuration::parse("threads=1,batch=4");
  RemoteTrainingSide side(tiny_spec(), config, o, 1, run(), "a");
  const double first = side.block();
  const double second = side.block();
  EXPECT_GT(first, 0);
  EXPECT_GT(second, 0);
}

TEST_F(TrainingSideTest, AConfigurationTheWorkerRefusesKeepsItsKind) {
  HeadToHeadOptions o;
  EXPECT_THROW(RemoteTrainingSide(tiny_spec(), Configuration::parse("amp=fp16"), o, 1, run(), "a"),
               ConfigError);
}

TEST_F(TrainingSideTest, AMissingModelIsNamedWithItsSideAndLog) {
  TrainingSpec s = tiny_spec();
  s.model = (dir_ / "missing.pt").string();
  HeadToHeadOptions o;
  try {
    RemoteTrainingSide side(s, Configuration(), o, 1, run(), "b");
    FAIL() << "the model is missing";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.pt"), std::string::npos) << e.what();
  }
}

}  // namespace torchperf
