// SPDX-License-Identifier: MIT
// harness/tower_training: the step scope holds the order a step needs — enqueued() once,
// then end() once; one step open at a time; a step abandoned without end() (an exception
// left the loop) is not logged — and the summary counts the steps that ended.
#include "harness/tower_training.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "harness/divergence.hpp"
#include "small_cifar.hpp"

namespace towers {
namespace {

TrainingFlags quick_flags() {
  TrainingFlags flags;
  flags.runtime.backend = BackendChoice::kHost;
  flags.runtime.devices = 2;
  flags.layout.batch_size = 2;
  flags.data_dir = testing::small_cifar_dir();
  flags.steps = 3;
  flags.log_every = 1;
  return flags;
}

class TowerTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override { ::testing::internal::CaptureStdout(); }
  void TearDown() override { ::testing::internal::GetCapturedStdout(); }
};

TEST_F(TowerTrainingTest, AStepEndsOnceAfterItsEnqueueing) {
  TowerTraining training(quick_flags(), /*probe=*/false);
  StepScope step = training.step(0);
  EXPECT_EQ(step.index(), 0);
  EXPECT_THROW(step.end(2.0f), std::logic_error) << "end() before enqueued()";
  step.enqueued();
  EXPECT_THROW(step.enqueued(), std::logic_error);
  step.end(2.0f);
  EXPECT_EQ(training.steps_run(), 1);
  EXPECT_THROW(step.end(2.0f), std::logic_error);
  EXPECT_EQ(training.steps_run(), 1);
}

TEST_F(TowerTrainingTest, OneStepIsOpenAtATimeAndAnAbandonedOneIsNotLogged) {
  TowerTraining training(quick_flags(), false);
  {
    StepScope abandoned = training.step(0);
    EXPECT_THROW(training.step(1), std::logic_error);
    abandoned.enqueued();
  }  // no end(): as when an exception leaves the loop
  EXPECT_EQ(training.steps_run(), 0);
  StepScope next = training.step(0);
  next.enqueued();
  next.end(1.5f);
  EXPECT_EQ(training.steps_run(), 1);
}

TEST_F(TowerTrainingTest, ANonFiniteLossStopsTheStep) {
  TowerTraining training(quick_flags(), false);
  StepScope step = training.step(0);
  step.enqueued();
  EXPECT_THROW(step.end(std::numeric_limits<float>::quiet_NaN()), Diverged);
  EXPECT_EQ(training.steps_run(), 0);
}

TEST_F(TowerTrainingTest, TheSummaryCountsTheStepsThatEnded) {
  {
    TowerTraining training(quick_flags(), false);
    EXPECT_EQ(training.num_towers(), 2);
    ASSERT_NE(training.images(), nullptr);
    for (int global_step = 0; global_step < 2; ++global_step) {
      StepScope step = training.step(global_step);
      step.enqueued();
      step.end(2.0f);
    }
    EXPECT_EQ(training.write_outputs_and_summary("test"), 0);
  }
  const std::string printed = ::testing::internal::GetCapturedStdout();
  ::testing::internal::CaptureStdout();  // for TearDown
  EXPECT_NE(printed.find("summary:"), std::string::npos) << printed;
  EXPECT_NE(printed.find(" steps=2 "), std::string::npos) << printed;
  EXPECT_NE(printed.find(" towers=2 "), std::string::npos) << printed;
  EXPECT_NE(printed.find("towers_meet=test"), std::string::npos) << printed;
  EXPECT_NE(printed.find("step 1, loss = 2.00"), std::string::npos) << printed;
}

}  // namespace
}  // namespace towers
