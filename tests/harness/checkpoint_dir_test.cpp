// SPDX-License-Identifier: MIT
// harness/checkpoint_dir: settled before the first step — a fresh run refuses a folder of
// old checkpoints unless --overwrite, --resume finds the newest or refuses, and
// --resume-if-present starts afresh. Flag combinations without a folder are refused.
// --resume refuses a checkpoint written with another optimizer (chapter 8's --optimizer).
#include "harness/checkpoint_dir.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/temp_dir.hpp"
#include "base/usage_error.hpp"
#include "model/parameters.hpp"

namespace towers {
namespace {

namespace fs = std::filesystem;

model::TrainingState state_at(std::int64_t step) {
  model::TrainingState state;
  state.global_step = step;
  state.params.assign(model::kNumParameters, 0.5f);
  state.moving_averages = state.params;
  return state;
}

CheckpointFlags in(const fs::path& dir) {
  CheckpointFlags flags;
  flags.dir = dir.string();
  return flags;
}

TEST(CheckpointDir, AFreshRunRefusesOldCheckpointsUnlessOverwrite) {
  base::TempDir tmp("checkpoint_dir_test_fresh");
  const fs::path dir = tmp.path() / "made" / "by it";
  testing::internal::CaptureStdout();
  {
    CheckpointDir first(in(dir));  // creates the folder with its parents
    EXPECT_TRUE(fs::is_directory(dir));
    EXPECT_FALSE(first.resumed());
    EXPECT_EQ(first.save(state_at(3)).filename(), "model.ckpt-3");
  }
  EXPECT_THROW(CheckpointDir{in(dir)}, UsageError);
  CheckpointFlags overwrite = in(dir);
  overwrite.overwrite = true;
  CheckpointDir afresh(overwrite);
  testing::internal::GetCapturedStdout();
  EXPECT_FALSE(fs::exists(dir / "model.ckpt-3"));
}

TEST(CheckpointDir, ResumeTakesTheHighestStepOrRefuses) {
  base::TempDir tmp("checkpoint_dir_test_resume");
  CheckpointFlags resume = in(tmp.path());
  resume.resume = true;
  EXPECT_THROW(CheckpointDir{resume}, UsageError);  // nothing to resume
  CheckpointFlags if_present = in(tmp.path());
  if_present.resume_if_present = true;
  testing::internal::CaptureStdout();
  EXPECT_FALSE(CheckpointDir(if_present).resumed());
  {
    CheckpointDir writer(in(tmp.path()));
    writer.save(state_at(20));
    writer.save(state_at(100));  // the higher step: newest, whatever the file times
  }
  CheckpointDir resumed(resume);
  testing::internal::GetCapturedStdout();
  ASSERT_TRUE(resumed.resumed());
  EXPECT_EQ(resumed.resumed()->global_step, 100);
  EXPECT_EQ(resumed.resumed_from().filename(), "model.ckpt-100");
}

// Two runs on one folder would interleave their checkpoints: the second refuses, naming
// the first's PID; once the first has ended (its lock released), the folder is free again.
TEST(CheckpointDir, ASecondRunOnTheSameFolderIsRefusedWhileTheFirstHoldsIt) {
  base::TempDir tmp("checkpoint_dir_test_lock");
  CheckpointFlags resume = in(tmp.path());
  resume.resume_if_present = true;
  testing::internal::CaptureStdout();
  {
    CheckpointDir first(in(tmp.path()));
    try {
      CheckpointDir second(resume);
      ADD_FAILURE() << "a second CheckpointDir on a locked folder was accepted";
    } catch (const UsageError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("is in use by another run (PID " + std::to_string(::getpid())),
                std::string::npos) << message;
      EXPECT_NE(message.find("--checkpoint-dir " + tmp.path().string()), std::string::npos) << message;
    }
    first.save(state_at(4));  // the refused run touched nothing of the first's
  }
  CheckpointDir after(resume);  // the lock file stays, but no process holds it
  testing::internal::GetCapturedStdout();
  ASSERT_TRUE(after.resumed());
  EXPECT_EQ(after.resumed()->global_step, 4);
  EXPECT_TRUE(fs::exists(tmp.path() / kFolderLockName));
}

TEST(CheckpointDir, FlagsThatNeedAFolderAreRefusedWithoutOne) {
  CheckpointFlags every;
  every.every_given = true;
  EXPECT_THROW(CheckpointDir{every}, UsageError);
  CheckpointFlags resume;
  resume.resume = true;
  EXPECT_THROW(CheckpointDir{resume}, UsageError);
  CheckpointDir none{CheckpointFlags{}};
  EXPECT_FALSE(none.enabled());
  EXPECT_FALSE(none.due(1000, true));
}

TEST(CheckpointDir, DueEveryNStepsOfTheGlobalStepAndAtTheLast) {
  base::TempDir tmp("checkpoint_dir_test_due");
  CheckpointFlags flags = in(tmp.path());
  flags.every = 10;
  CheckpointDir dir(flags);
  EXPECT_TRUE(dir.due(20, false));
  EXPECT_FALSE(dir.due(25, false));
  EXPECT_TRUE(dir.due(25, true));
}

// A checkpoint of momentum holds a velocity, one of SGD nothing: resuming either with another
// rule would not continue the run that wrote it, so the folder refuses before any step,
// naming both optimizers and what to do. The same rule resumes.
TEST(CheckpointDir, ResumeRefusesACheckpointOfAnotherOptimizer) {
  base::TempDir tmp("checkpoint_dir_test_optimizer");
  const fs::path sgd = tmp.path() / "sgd", momentum = tmp.path() / "momentum";
  testing::internal::CaptureStdout();
  // As a run saves them: with the input's position (a file without one is a --save-params
  // file, parameters only, which --resume names as such).
  model::TrainingState plain = state_at(2);
  plain.input = data::InputPosition{1, 64, 8, 0, 16};
  CheckpointDir(in(sgd)).save(plain);
  model::TrainingState with_velocity = plain;
  with_velocity.optimizer = model::Optimizer::kMomentum;
  with_velocity.optimizer_state.assign(model::kNumParameters, 0.25f);
  CheckpointFlags momentum_flags = in(momentum);
  momentum_flags.optimizer = model::Optimizer::kMomentum;
  CheckpointDir(momentum_flags).save(with_velocity);

  const auto expect_refused = [](const fs::path& dir, model::Optimizer run,
                                 const std::string& saved_name, const std::string& run_name) {
    CheckpointFlags flags = in(dir);
    flags.resume = true;
    flags.optimizer = run;
    try {
      CheckpointDir refused(flags);
      ADD_FAILURE() << run_name << " resumed a checkpoint of " << saved_name;
    } catch (const UsageError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("written with --optimizer " + saved_name + " and this run trains with " +
                             run_name), std::string::npos) << message;
      EXPECT_NE(message.find("Resume with --optimizer " + saved_name), std::string::npos) << message;
    }
  };
  expect_refused(sgd, model::Optimizer::kMomentum, "sgd", "momentum");
  expect_refused(momentum, model::Optimizer::kAdam, "momentum", "adam");
  expect_refused(momentum, model::Optimizer::kSgd, "momentum", "sgd");  // chapters 1-7

  CheckpointFlags same = in(momentum);
  same.resume = true;
  same.optimizer = model::Optimizer::kMomentum;
  CheckpointDir resumed(same);
  testing::internal::GetCapturedStdout();
  ASSERT_TRUE(resumed.resumed());
  EXPECT_EQ(resumed.resumed()->optimizer_state, with_velocity.optimizer_state);
}

}  // namespace
}  // namespace towers
