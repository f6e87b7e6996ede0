// SPDX-License-Identifier: MIT
#include "parallel/tower_variables.hpp"

#include "model/parameters.hpp"
#include "parallel/one_device_variables.hpp"

namespace towers {

TowerVariables::TowerVariables(std::vector<std::unique_ptr<Tower>>& towers) {
  constexpr std::size_t bytes = model::kNumParameters * sizeof(float);
  for (auto& tower : towers) {
    owned_.push_back(tower->device->allocate(bytes, MemoryCategory::kParameters));
    params.push_back(owned_.back().as<float>());
    // The moving averages are the tutorial's only state kept for the update: the
    // optimizer state of chapter 8's memory ledger.
    owned_.push_back(tower->device->allocate(bytes, MemoryCategory::kOptimizerState));
    averages.push_back(owned_.back().as<float>());
    grads.push_back(tower->grads.as<float>());
    streams.push_back(tower->stream.get());
  }
}

void TowerVariables::state_to_host(model::TrainingState& state) {
  state.params.resize(model::kNumParameters);
  state.moving_averages.resize(model::kNumParameters);
  state.optimizer_state.clear();
  copy_to_host(*streams[0], state.params.data(), params[0], model::kNumParameters);
  copy_to_host(*streams[0], state.moving_averages.data(), averages[0], model::kNumParameters);
}

void TowerVariables::params_to_host(float* host) {
  copy_to_host(*streams[0], host, params[0], model::kNumParameters);
}

void TowerVariables::load_from_host(const model::TrainingState& state) {
  for (std::size_t i = 0; i < streams.size(); ++i) {
    copy_from_host(*streams[i], params[i], state.params.data(), model::kNumParameters);
    copy_from_host(*streams[i], averages[i], state.moving_averages.data(), model::kNumParameters);
  }
  for (Stream* stream : streams) stream->synchronize();
}

}  // namespace towers
