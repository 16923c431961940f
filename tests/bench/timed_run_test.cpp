#include "torchperf/bench/timed_run.h"

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "torchperf/config/apply.h"
#include "torchperf/error.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/feed/inputs.h"

namespace torchperf {
namespace {

struct Fixture {
  Workload workload;
  ResolvedConfiguration config;
};

std::unique_ptr<Fixture> mlp(const std::string& config) {
  auto f = std::make_unique<Fixture>();
  f->workload.model = open_model("builtin:mlp")->load();
  f->workload.spec = find_builtin("mlp").default_inputs;
  f->workload.inputs = make_inputs(*f->workload.spec, 2, 0);
  f->config = resolve(Configuration::parse(config), describe_workload(f->workload, false));
  prepare_workload(f->config, f->workload);
  return f;
}

}  // namespace

TEST(TimedRunTest, CallKnobsAreUndoneAfterEveryCall) {
  auto f = mlp("grad=no_grad");
  const TimedRun run = make_timed_run(f->workload, f->config);
  run.iterate();
  EXPECT_TRUE(c10::GradMode::is_enabled());
}

TEST(TimedRunTest, ProcessKnobsHoldBetweenEnterAndExit) {
  const int before = at::get_num_threads();
  auto f = mlp("threads=" + std::to_string(before + 1));
  const TimedRun run = make_timed_run(f->workload, f->config);
  run.enter();
  EXPECT_EQ(at::get_num_threads(), before + 1);
  run.iterate();
  run.exit();
  EXPECT_EQ(at::get_num_threads(), before);
}

TEST(TimedRunTest, AFailingCallNamesItsConfiguration) {
  auto f = mlp("grad=no_grad");
  f->workload.inputs = make_inputs(parse_input_spec("3"), 1, 0);
  const TimedRun run = make_timed_run(f->workload, f->config);
  try {
    run.iterate();
    FAIL();
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("grad=no_grad"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(TimedRunTest, AFailingCallStillRestoresTheKnobs) {
  auto f = mlp("grad=inference");
  f->workload.inputs = make_inputs(parse_input_spec("3"), 1, 0);  // the MLP wants 784 features
  const TimedRun run = make_timed_run(f->workload, f->config);
  EXPECT_ANY_THROW(run.iterate());
  EXPECT_FALSE(c10::InferenceMode::is_enabled());
  EXPECT_TRUE(c10::GradMode::is_enabled());
}

}  // namespace torchperf
