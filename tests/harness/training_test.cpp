// SPDX-License-Identifier: MIT
// harness/training: the log's averages leave out the warm-up step and the probe's step, a
// non-finite loss stops the log, and one failed output does not stop the ones after it.
#include "harness/training.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "harness/divergence.hpp"

namespace towers {
namespace {

TEST(StepLog, AveragesLeaveOutTheWarmUpStep) {
  StepLog log(/*examples_per_step=*/64, /*towers=*/2, /*log_every=*/10, /*total_steps=*/3);
  log.step_done(0, 2.0f, 1.0);   // the warm-up: slow, left out
  log.step_done(1, 2.0f, 0.25);
  log.step_done(2, 2.0f, 0.75);
  EXPECT_EQ(log.steps(), 3);
  EXPECT_DOUBLE_EQ(log.mean_step_ms(), 500.0);
  EXPECT_DOUBLE_EQ(log.examples_per_sec(), 64 / 0.5);
}

TEST(StepLog, AveragesLeaveOutTheProbeStep) {
  StepLog log(64, 2, 10, 4);
  log.step_done(0, 2.0f, 1.0);          // the warm-up
  log.step_done(1, 2.0f, 1.5, false);   // the probe's step: a rendezvous timed out
  log.step_done(2, 2.0f, 0.25);
  log.step_done(3, 2.0f, 0.75);
  EXPECT_DOUBLE_EQ(log.mean_step_ms(), 500.0);
  EXPECT_DOUBLE_EQ(log.examples_per_sec(), 64 / 0.5);
}

TEST(StepLog, OnlyTheProbeStepAfterTheWarmUpIsStillAnAverage) {
  StepLog log(64, 2, 10, 2);
  log.step_done(0, 2.0f, 1.0);
  log.step_done(1, 2.0f, 0.5, false);  // --steps 2 --probe: no other step to average
  EXPECT_DOUBLE_EQ(log.mean_step_ms(), 500.0);
}

TEST(StepLog, OneStepIsItsOwnAverage) {
  StepLog log(32, 1, 10, 1);
  log.step_done(0, 1.0f, 0.5);
  EXPECT_DOUBLE_EQ(log.mean_step_ms(), 500.0);
  EXPECT_DOUBLE_EQ(log.examples_per_sec(), 64.0);
}

TEST(StepLog, ANonFiniteLossIsNotRecorded) {
  StepLog log(32, 1, 10, 5);
  log.step_done(0, 1.0f, 0.1);
  EXPECT_THROW(log.step_done(1, std::numeric_limits<float>::quiet_NaN(), 0.1), Diverged);
  EXPECT_EQ(log.steps(), 1);
}

TEST(WriteOutput, AFailureIsReportedAndReturnedNotThrown) {
  bool ran = false;
  EXPECT_TRUE(write_output([&] { ran = true; }));
  EXPECT_TRUE(ran);
  ::testing::internal::CaptureStderr();
  const bool written = write_output([] { throw std::runtime_error("disk full"); });
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(written);
  EXPECT_NE(printed.find("error: disk full"), std::string::npos) << printed;
}

}  // namespace
}  // namespace towers
