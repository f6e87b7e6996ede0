// SPDX-License-Identifier: MIT
// harness/launch_times: chapter 7's host_launch_ms averages the launches of the untraced
// steps after the first (a traced launch on cuda also records the trace's CUDA events),
// and says what it averaged when no such step is left.
#include "harness/launch_times.hpp"

#include <gtest/gtest.h>

namespace towers {
namespace {

// cuda's default: the probe's step (1) and the last are traced.
TEST(LaunchTimes, LeavesOutTheFirstStepAndTheTracedSteps) {
  LaunchTimes times;
  times.add(0, false, 100.0);  // one-time costs
  times.add(1, true, 50.0);    // the probe's step, traced
  times.add(2, false, 10.0);
  times.add(3, false, 20.0);
  times.add(4, true, 60.0);    // the last step, traced
  EXPECT_DOUBLE_EQ(times.mean_ms(), 15.0) << "the mean of steps 2 and 3 only";
  EXPECT_EQ(times.counted(), 2);
  EXPECT_EQ(times.from(), "untraced_steps");
}

// The host backend traces every step (and cuda with a trace file): the steps after the
// first are all there is, and the key says so.
TEST(LaunchTimes, EveryStepTracedAveragesTheTracedStepsAfterTheFirst) {
  LaunchTimes times;
  times.add(0, true, 100.0);
  times.add(1, true, 4.0);
  times.add(2, true, 8.0);
  EXPECT_DOUBLE_EQ(times.mean_ms(), 6.0);
  EXPECT_EQ(times.counted(), 2);
  EXPECT_EQ(times.from(), "traced_steps");
}

TEST(LaunchTimes, OneStepIsItsOwnMeanAndNoStepIsZero) {
  LaunchTimes none;
  EXPECT_EQ(none.mean_ms(), 0.0);
  EXPECT_EQ(none.counted(), 0);
  EXPECT_EQ(none.from(), "none");
  LaunchTimes one;
  one.add(0, true, 7.5);
  EXPECT_DOUBLE_EQ(one.mean_ms(), 7.5);
  EXPECT_EQ(one.counted(), 1);
  EXPECT_EQ(one.from(), "first_step");
}

}  // namespace
}  // namespace towers
