#include "torchperf/bench/bench_options.h"

#include <gtest/gtest.h>

#include <limits>

#include "torchperf/error.h"

namespace torchperf {

TEST(BenchOptionsTest, AcceptsTheDefaults) {
  BenchOptions o;
  o.model = "builtin:mlp";
  EXPECT_NO_THROW(validate(o));
}

TEST(BenchOptionsTest, RefusesAZeroNegativeOrInfiniteTimeBudget) {
  BenchOptions o;
  o.model = "builtin:mlp";
  for (double t : {0.0, -1.0, 1e12, std::numeric_limits<double>::infinity()}) {
    o.time_s = t;
    EXPECT_THROW(validate(o), UsageError) << t;
  }
}

TEST(BenchOptionsTest, RefusesTwoWaysToFeedTheModel) {
  BenchOptions o;
  o.model = "m.pt";
  o.input_spec = "3x8x8";
  o.inputs_file = "x.pt";
  EXPECT_THROW(validate(o), UsageError);
}

TEST(BenchOptionsTest, RequiresAModelAndASensibleTarget) {
  BenchOptions o;
  EXPECT_THROW(validate(o), UsageError);
  o.model = "builtin:mlp";
  o.target_relative_ci = 0;
  EXPECT_THROW(validate(o), UsageError);
}

}  // namespace torchperf
