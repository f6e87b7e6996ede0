// SPDX-License-Identifier: MIT
#include "parallel/device_zero_variables.hpp"

#include "model/parameters.hpp"
#include "parallel/one_device_variables.hpp"

namespace towers {

DeviceZeroVariables::DeviceZeroVariables(std::vector<std::unique_ptr<Replica>>& replicas,
                                         Stream& meet)
    : replicas_(replicas),
      meet_(meet),
      averages_(replicas[0]->device->allocate(model::kNumParameters * sizeof(float),
                                              MemoryCategory::kOptimizerState)) {}

void DeviceZeroVariables::state_to_host(model::TrainingState& state) {
  state.params.resize(model::kNumParameters);
  state.moving_averages.resize(model::kNumParameters);
  state.optimizer_state.clear();
  copy_to_host(meet_, state.params.data(), params(), model::kNumParameters);
  copy_to_host(meet_, state.moving_averages.data(), averages(), model::kNumParameters);
}

void DeviceZeroVariables::params_to_host(float* host) {
  copy_to_host(meet_, host, params(), model::kNumParameters);
}

void DeviceZeroVariables::load_from_host(const model::TrainingState& state) {
  for (auto& replica : replicas_) {
    copy_from_host(meet_, replica->params.as<float>(), state.params.data(), model::kNumParameters);
  }
  copy_from_host(meet_, averages(), state.moving_averages.data(), model::kNumParameters);
  meet_.synchronize();
}

}  // namespace towers
