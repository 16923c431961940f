#include "torchperf/process/process_age.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

namespace torchperf {

TEST(ProcessAgeTest, TheStartTimeIsReadPastACommandNameWithSpacesAndParentheses) {
  // pid (comm) state ppid ... with starttime (field 22) 500 ticks after boot, at 100 ticks/s.
  const std::string line =
      "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 1 0 500 1000 10";
  EXPECT_DOUBLE_EQ(process_age_from(line, 12.5, 100), 7.5);
  EXPECT_TRUE(std::isnan(process_age_from("4242 (x) S 1 2", 12.5, 100))) << "too few fields";
  EXPECT_TRUE(std::isnan(process_age_from("no parenthesis", 12.5, 100)));
}

TEST(ProcessAgeTest, ThisProcessHasRunForAWhileAndItsAgeGrows) {
  const double before = seconds_since_process_start();
  ASSERT_FALSE(std::isnan(before));
  EXPECT_GE(before, 0.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_GE(seconds_since_process_start(), before + 0.03);
}

}  // namespace torchperf
