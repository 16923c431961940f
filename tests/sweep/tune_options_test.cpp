#include "torchperf/sweep/tune_options.h"

#include <gtest/gtest.h>

#include "torchperf/error.h"

namespace torchperf {

TEST(TuneOptionsTest, ParsesASpaceStringAndPrintsItBack) {
  const auto space = parse_space("precision=fp32,bf16-autocast; graph=eager,frozen-opt");
  ASSERT_EQ(space.size(), 2u);
  EXPECT_EQ(space.at("precision"), (std::vector<std::string>{"fp32", "bf16-autocast"}));
  EXPECT_EQ(space_to_string(space), "graph=eager,frozen-opt;precision=fp32,bf16-autocast");
  EXPECT_TRUE(parse_space("").empty());
}

TEST(TuneOptionsTest, RejectsMalformedSpacesNamingThePart) {
  for (const char* bad : {"precision", "=fp32", "precision=", "graph=eager;graph=frozen"}) {
    try {
      parse_space(bad);
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--space"), std::string::npos) << e.what();
    }
  }
}

TEST(TuneOptionsTest, ParsesDurationsWithUnits) {
  EXPECT_DOUBLE_EQ(parse_duration("90", "--budget"), 90);
  EXPECT_DOUBLE_EQ(parse_duration("20m", "--budget"), 1200);
  EXPECT_DOUBLE_EQ(parse_duration("1h30m", "--budget"), 5400);
  EXPECT_DOUBLE_EQ(parse_duration("0", "--budget"), 0);
  for (const char* bad : {"", "ten", "5x", "-3m", "1h30"})
    EXPECT_THROW(parse_duration(bad, "--budget"), UsageError) << bad;
}

TEST(TuneOptionsTest, ParsesSizesWithBinaryUnits) {
  EXPECT_EQ(parse_size("4G", "--memory-cap"), 4LL << 30);
  EXPECT_EQ(parse_size("512MiB", "--memory-cap"), 512LL << 20);
  EXPECT_EQ(parse_size("1000", "--memory-cap"), 1000);
  for (const char* bad : {"", "-1G", "4T", "lots"})
    EXPECT_THROW(parse_size(bad, "--memory-cap"), UsageError) << bad;
}

TEST(TuneOptionsTest, TheExperimentRoundTripsButLimitsAreNotPartOfIt) {
  TuneOptions a;
  a.workload.model = "builtin:mlp";
  a.workload.input_spec = "784";
  a.workload.time_s = 0.5;
  a.space = parse_space("batch=1,8");
  a.objective = Objective::parse("latency-p99");
  a.guard = AccuracyGuard::parse("max_abs<=0.01");
  a.order_seed = 7;
  TuneOptions b;
  b.budget_s = 60;
  b.memory_cap_bytes = 1 << 30;
  apply_experiment_json(experiment_json(a), b);
  EXPECT_EQ(experiment_json(a), experiment_json(b));
  EXPECT_EQ(b.budget_s, 60);
  a.budget_s = 5;
  EXPECT_EQ(experiment_json(a), experiment_json(b));
  a.space = parse_space("batch=1");
  EXPECT_NE(experiment_json(a), experiment_json(b));
}

TEST(TuneOptionsTest, ValidationRefusesOutOfRangeLimits) {
  TuneOptions o;
  o.workload.model = "builtin:mlp";
  o.out_dir = "/tmp/x";
  EXPECT_NO_THROW(validate(o));
  o.budget_s = -1;
  EXPECT_THROW(validate(o), UsageError);
  o.budget_s = 0;
  o.leaders = 0;
  EXPECT_THROW(validate(o), UsageError);
  o.leaders = 3;
  o.out_dir.clear();
  EXPECT_THROW(validate(o), UsageError);
}

TEST(TuneOptionsTest, DerivedLimitsFollowThePointTimeAndTheMachine) {
  TuneOptions o;
  o.workload.time_s = 30;
  EXPECT_DOUBLE_EQ(effective_point_timeout_s(o), 300);
  o.point_timeout_s = 5;
  EXPECT_DOUBLE_EQ(effective_point_timeout_s(o), 5);
  EXPECT_GT(effective_memory_cap_bytes(o), 0);
  o.memory_cap_bytes = 123;
  EXPECT_EQ(effective_memory_cap_bytes(o), 123);
}

}  // namespace torchperf
