// SPDX-License-Identifier: MIT
// parallel/tower_variables, started by the hub: every tower gets its own parameters and
// moving averages, both equal to the run's initial parameters, beside its own gradients
// and stream; and what --save-params writes is tower 0's parameters as they are at the
// end, not the start.
#include "parallel/tower_variables.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "base/temp_dir.hpp"
#include "harness/tower_training.hpp"
#include "model/checkpoint.hpp"
#include "model/parameters.hpp"
#include "small_cifar.hpp"

namespace towers {
namespace {

constexpr std::size_t kBytes = model::kNumParameters * sizeof(float);

std::vector<float> read(Stream& stream, const float* device_values) {
  std::vector<float> host(model::kNumParameters);
  stream.copy(host.data(), device_values, kBytes);
  stream.synchronize();
  return host;
}

TEST(TowerVariables, EveryTowerOwnsItsVariablesStartingFromTheInitialParameters) {
  ::testing::internal::CaptureStdout();
  const TrainingFlags flags = testing::two_host_towers(1);
  TowerTraining training(flags, /*probe=*/false);
  TowerVariables vars(training.towers());
  training.start(vars);
  ::testing::internal::GetCapturedStdout();
  const int n = training.num_towers();
  ASSERT_EQ(n, 2);
  ASSERT_EQ(vars.params.size(), 2u);
  ASSERT_EQ(vars.averages.size(), 2u);
  const std::vector<float> initial = fresh_state(flags.seed).params;  // --seed's
  std::set<const float*> distinct;
  for (int i = 0; i < n; ++i) {
    Tower& tower = *training.towers()[i];
    EXPECT_EQ(vars.grads[i], tower.grads.as<float>());
    EXPECT_EQ(vars.streams[i], tower.stream.get());
    EXPECT_EQ(read(*tower.stream, vars.params[i]), initial) << "tower " << i << "'s parameters";
    EXPECT_EQ(read(*tower.stream, vars.averages[i]), initial) << "tower " << i << "'s averages";
    distinct.insert(vars.params[i]);
    distinct.insert(vars.averages[i]);
  }
  EXPECT_EQ(distinct.size(), 4u) << "each tower needs buffers of its own";
}

TEST(TowerVariables, SaveParamsWritesTowerZerosCurrentParameters) {
  base::TempDir dir("tower-variables");
  TrainingFlags flags = testing::two_host_towers(1);
  flags.save_params = (dir.path() / "params.ckpt").string();
  ::testing::internal::CaptureStdout();
  TowerTraining training(flags, /*probe=*/false);
  TowerVariables vars(training.towers());
  training.start(vars);
  const float changed = 0.25f;  // an update applied after the set-up
  vars.streams[0]->copy(vars.params[0] + 7, &changed, sizeof(float));
  vars.streams[0]->synchronize();
  const int status = training.write_outputs_and_summary("test");
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(status, 0);
  const model::TrainingState saved = model::load_checkpoint(flags.save_params);
  EXPECT_EQ(saved.params[7], changed);
  EXPECT_EQ(saved.params[8], fresh_state(flags.seed).params[8]);
}

}  // namespace
}  // namespace towers
