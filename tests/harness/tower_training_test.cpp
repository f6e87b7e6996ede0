// SPDX-License-Identifier: MIT
// harness/tower_training: the step scope holds the order a step needs — enqueued() once,
// then end() once; one step open at a time; a step abandoned without end() (an exception
// left the loop) is not logged — and the summary counts the steps that ended. With chapter
// 1's checkpoint flags it saves at the cadence and resumes the state it saved into the
// variables it was handed (a Placement).
#include "harness/tower_training.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "../data/temp_dir.hpp"
#include "harness/divergence.hpp"
#include "model/checkpoint.hpp"
#include "model/parameters.hpp"
#include "small_cifar.hpp"

namespace towers {
namespace {

// A placement whose state is two constants: what the hub checks and saves, and the
// state the hub hands it at start() (loaded).
class ConstantVariables : public Placement {
 public:
  explicit ConstantVariables(float param = 1.0f, float average = 2.0f)
      : param_(param), average_(average) {}
  std::string where() const override { return "constants"; }
  void state_to_host(model::TrainingState& state) override {
    state.params.assign(model::kNumParameters, param_);
    state.moving_averages.assign(model::kNumParameters, average_);
    state.optimizer_state.clear();
  }
  void params_to_host(float* params) override { std::fill_n(params, model::kNumParameters, param_); }
  void load_from_host(const model::TrainingState& state) override { loaded = state; }
  model::TrainingState loaded;

 private:
  float param_, average_;
};

// Two host towers of batch 3, without the probe, started on `vars`.
std::unique_ptr<TowerTraining> started_on(ConstantVariables& vars) {
  auto training = std::make_unique<TowerTraining>(testing::two_host_towers(3), /*probe=*/false);
  training->start(vars);
  return training;
}

class TowerTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override { ::testing::internal::CaptureStdout(); }
  void TearDown() override { ::testing::internal::GetCapturedStdout(); }
};

// Which steps are traced, as chapter 7's host_launch_ms reads it (StepScope::traced()):
// cuda without a trace file only the probe's step and the last; otherwise every step.
TEST(StepIsTraced, CudaTracesTheProbesStepAndTheLastTheHostBackendEveryStep) {
  for (int step = 0; step < 6; ++step) {
    EXPECT_TRUE(step_is_traced(Backend::kHost, false, step, 6)) << step;
    EXPECT_TRUE(step_is_traced(Backend::kCuda, true, step, 6)) << step;
    EXPECT_EQ(step_is_traced(Backend::kCuda, false, step, 6), step == 1 || step == 5) << step;
  }
  EXPECT_TRUE(step_is_traced(Backend::kCuda, false, 0, 1)) << "one step: the probe's and the last";
}

TEST_F(TowerTrainingTest, TheHostBackendTracesEveryStep) {
  ConstantVariables vars;
  const auto training = started_on(vars);
  for (int i = 0; i < 2; ++i) {
    StepScope step = training->step(i);
    EXPECT_TRUE(step.traced()) << i;
    step.enqueued();
    step.end(2.0f);
  }
}

TEST_F(TowerTrainingTest, AStepEndsOnceAfterItsEnqueueing) {
  ConstantVariables vars;
  const auto training = started_on(vars);
  StepScope step = training->step(0);
  EXPECT_EQ(step.index(), 0);
  EXPECT_THROW(step.end(2.0f), std::logic_error) << "end() before enqueued()";
  step.enqueued();
  EXPECT_THROW(step.enqueued(), std::logic_error);
  step.end(2.0f);
  EXPECT_EQ(training->steps_run(), 1);
  EXPECT_THROW(step.end(2.0f), std::logic_error);
  EXPECT_EQ(training->steps_run(), 1);
}

TEST_F(TowerTrainingTest, OneStepIsOpenAtATimeAndAnAbandonedOneIsNotLogged) {
  ConstantVariables vars;
  const auto training = started_on(vars);
  {
    StepScope abandoned = training->step(0);
    EXPECT_THROW(training->step(1), std::logic_error);
    abandoned.enqueued();
  }  // no end(): as when an exception leaves the loop
  EXPECT_EQ(training->steps_run(), 0);
  StepScope next = training->step(0);
  next.enqueued();
  next.end(1.5f);
  EXPECT_EQ(training->steps_run(), 1);
}

TEST_F(TowerTrainingTest, ANonFiniteLossStopsTheStep) {
  ConstantVariables vars;
  const auto training = started_on(vars);
  StepScope step = training->step(0);
  step.enqueued();
  EXPECT_THROW(step.end(std::numeric_limits<float>::quiet_NaN()), Diverged);
  EXPECT_EQ(training->steps_run(), 0);
}

TEST_F(TowerTrainingTest, TheSummaryCountsTheStepsThatEnded) {
  {
    ConstantVariables vars;
    const auto training = started_on(vars);
    EXPECT_EQ(training->num_towers(), 2);
    ASSERT_NE(training->images(), nullptr);
    for (int global_step = 0; global_step < 2; ++global_step) {
      StepScope step = training->step(global_step);
      step.enqueued();
      step.end(2.0f);
    }
    EXPECT_EQ(training->write_outputs_and_summary("test"), 0);
  }
  const std::string printed = ::testing::internal::GetCapturedStdout();
  ::testing::internal::CaptureStdout();  // for TearDown
  EXPECT_NE(printed.find("summary:"), std::string::npos) << printed;
  EXPECT_NE(printed.find(" steps=2 "), std::string::npos) << printed;
  EXPECT_NE(printed.find(" towers=2 "), std::string::npos) << printed;
  EXPECT_NE(printed.find("towers_meet=test"), std::string::npos) << printed;
  EXPECT_NE(printed.find("step 1, loss = 2.00"), std::string::npos) << printed;
  // Without the checkpoint flags (TowerFlags') the summary keeps its keys: no global_step, no precision.
  EXPECT_EQ(printed.find("global_step="), std::string::npos) << printed;
  EXPECT_EQ(printed.find("precision_at_1="), std::string::npos) << printed;
}

// Runs `steps` steps that leave the parameters at `param` and the averages at `average`.
void run_steps(TowerTraining& training, int steps, float param, float average) {
  ConstantVariables vars(param, average);
  training.start(vars);
  for (int i = 0; i < steps; ++i) {
    StepScope step = training.step(i);
    step.enqueued();
    step.end(2.0f);
  }
}

TEST_F(TowerTrainingTest, CheckpointsSaveAtTheCadenceAndResumeTheStateAndTheInput) {
  data::testing::TempDir dir;
  TrainingFlags flags = testing::two_host_towers(3);  // 2 towers of batch 2: global batch 4 of 80 images
  flags.resumable = true;
  flags.checkpoints.dir = dir.path().string();
  flags.checkpoints.every = 2;
  {
    TowerTraining training(flags, false);
    run_steps(training, 3, 1.0f, 2.0f);
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "model.ckpt-2"));  // the cadence
  const model::TrainingState saved = model::load_checkpoint(dir.path() / "model.ckpt-3");  // the last
  EXPECT_EQ(saved.global_step, 3);
  EXPECT_EQ(saved.params, std::vector<float>(model::kNumParameters, 1.0f));
  EXPECT_EQ(saved.moving_averages, std::vector<float>(model::kNumParameters, 2.0f));
  ASSERT_TRUE(saved.input.has_value());
  EXPECT_EQ(saved.input->global_batch, 4u);
  EXPECT_EQ(saved.input->position, 12u);

  flags.checkpoints.resume = true;
  TowerTraining resumed(flags, false);
  ConstantVariables vars(0.0f, 0.0f);
  resumed.start(vars);
  ASSERT_EQ(vars.loaded.params.size(), model::kNumParameters);
  EXPECT_EQ(vars.loaded.params[0], 1.0f);
  EXPECT_EQ(vars.loaded.moving_averages[model::kNumParameters - 1], 2.0f);
  StepScope step = resumed.step(0);
  EXPECT_EQ(step.index(), 0);
  EXPECT_EQ(step.global_step(), 3);
}

TEST_F(TowerTrainingTest, AStepEndedBeforeTheVariablesWereHandedOverIsAProgrammingError) {
  data::testing::TempDir dir;
  TrainingFlags flags = testing::two_host_towers(3);
  flags.checkpoints.dir = dir.path().string();
  flags.steps = 1;
  TowerTraining training(flags, false);  // no start(): nothing to check or save
  StepScope step = training.step(0);
  step.enqueued();
  EXPECT_THROW(step.end(2.0f), std::logic_error);
}

}  // namespace
}  // namespace towers
