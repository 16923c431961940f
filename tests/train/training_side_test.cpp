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
