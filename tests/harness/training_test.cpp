// SPDX-License-Identifier: MIT
// harness/training: the log's averages leave out the warm-up step and the probe's step, a
// non-finite loss stops the log, and one failed output does not stop the ones after it.
#include "harness/training.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "harness/divergence.hpp"
#include "runtime/runtime.hpp"

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

// Every step's ops whose kernel stamps were lost add up over the run: what the summary's
// lost_stamp_ops (cuda) and the warning before it report.
TEST(StepTraces, LostStampsOfEveryStepAddUp) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  StepTraces traces(*rt, TraceFiles{});
  for (int step = 0; step < 3; ++step) {
    TraceEvent op{0, 0, 0, step, "relu", 0, 10};
    op.stamps_lost = step != 1;  // steps 0 and 2 lost one op's stamps each
    rt->trace().add(op);
    rt->trace().add(TraceEvent{0, 1, 1, step, "conv1", 0, 10});
    traces.collect(step);
  }
  EXPECT_EQ(traces.lost_stamp_ops(), 2);
}

}  // namespace
}  // namespace towers
