// SPDX-License-Identifier: MIT
// harness/divergence: a non-finite loss or parameter stops the run with TF's words, and
// names the variable and index of the first bad parameter.
#include "harness/divergence.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "base/temp_dir.hpp"
#include "harness/training_run.hpp"  // save_params_file
#include "model/checkpoint.hpp"
#include "model/parameters.hpp"

namespace towers {
namespace {

TEST(Divergence, ANonFiniteParameterIsFoundByName) {
  std::vector<float> params(model::kNumParameters, 0.5f);
  EXPECT_NO_THROW(check_parameters(params.data(), 7));
  const model::ParameterView& view = model::parameter_layout()[2];
  params[view.offset + 3] = std::numeric_limits<float>::quiet_NaN();
  try {
    check_parameters(params.data(), 7);
    ADD_FAILURE() << "a NaN parameter passed";
  } catch (const Diverged& e) {
    EXPECT_NE(std::string(e.what()).find("Model diverged with " + view.name + "[3] = NaN"),
              std::string::npos) << e.what();
  }
}

TEST(Divergence, ANonFiniteOptimizerStateIsDivergenceNotAUsageError) {
  std::vector<float> state(12, 0.25f);
  EXPECT_NO_THROW(check_optimizer_state(state, "adam", 7));
  state[9] = std::numeric_limits<float>::infinity();  // Adam's second moment overflowed
  try {
    check_optimizer_state(state, "adam", 7);
    ADD_FAILURE() << "an infinite optimizer state passed";
  } catch (const Diverged& e) {
    EXPECT_NE(std::string(e.what()).find("--optimizer adam's state[9] = inf after step 7"),
              std::string::npos) << e.what();
  }
}

TEST(Divergence, ANonFiniteLossStopsTheRunWithTheTutorialsWords) {
  EXPECT_THROW(check_loss(std::numeric_limits<float>::infinity(), 1), Diverged);
  EXPECT_NO_THROW(check_loss(2.3f, 1));
  try {
    check_loss(std::numeric_limits<float>::quiet_NaN(), 1);
    ADD_FAILURE() << "a NaN loss passed";
  } catch (const Diverged& e) {
    EXPECT_NE(std::string(e.what()).find("Model diverged with loss = NaN"), std::string::npos)
        << e.what();
  }
}

TEST(Divergence, ParametersAreCheckedEveryKParameterCheckEverySteps) {
  EXPECT_FALSE(parameter_check_due(1));
  EXPECT_FALSE(parameter_check_due(kParameterCheckEvery - 1));
  EXPECT_TRUE(parameter_check_due(kParameterCheckEvery));
  EXPECT_TRUE(parameter_check_due(3 * kParameterCheckEvery));
}

// --save-params' one writer (chapter 1's TrainingRun and chapter 11's mesh both call it):
// a NaN weight the loss never saw (hidden behind a ReLU) is divergence, and no file is left.
TEST(Divergence, SaveParamsWritesNoFileOfANonFiniteParameter) {
  base::TempDir tmp("divergence_test_save_params");
  const std::filesystem::path file = tmp.path() / "params.ckpt";
  std::vector<float> params(model::kNumParameters, 0.5f);
  params[model::parameter_layout()[1].offset] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(save_params_file(file.string(), 4, params), Diverged);
  EXPECT_FALSE(std::filesystem::exists(file));
  params[model::parameter_layout()[1].offset] = 0.25f;
  save_params_file(file.string(), 4, params);
  const model::TrainingState saved = model::load_checkpoint(file);
  EXPECT_EQ(saved.global_step, 4);
  EXPECT_EQ(saved.params, params);
  EXPECT_EQ(saved.moving_averages, params);
}

}  // namespace
}  // namespace towers
