// SPDX-License-Identifier: MIT
#include "base/timing.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace towers::base {
namespace {

TEST(Median, OddCountIsTheMiddleEvenCountTheMeanOfTheTwoMiddles) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({}), 0);
}

TEST(Best, IsTheSmallest) {
  EXPECT_EQ(best({3, 0.5, 2}), 0.5);
  EXPECT_EQ(best({}), 0);
}

TEST(Since, CountsElapsedTimeInItsUnit) {
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double ms = ms_since(start), s = seconds_since(start);
  EXPECT_GE(ms, 20);
  EXPECT_GE(s, 0.020);
  EXPECT_LT(s, 10.0);  // the same interval, in seconds, not milliseconds
}

}  // namespace
}  // namespace towers::base
