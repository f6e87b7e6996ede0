// SPDX-License-Identifier: MIT
#include "harness/tower_variables.hpp"

#include <utility>

#include "model/parameters.hpp"

namespace towers {

TowerVariables::TowerVariables(TowerTraining& training) {
  constexpr std::size_t bytes = model::kNumParameters * sizeof(float);
  // Both start from the run's initial values: --seed's, or the resumed checkpoint's.
  const std::pair<std::vector<float*>*, const float*> variables[] = {
      {&params, training.initial_params()}, {&averages, training.initial_averages()}};
  for (auto& tower : training.towers()) {
    for (const auto& [variable, initial] : variables) {
      owned_.push_back(tower->device->allocate(bytes));
      tower->stream->copy(owned_.back().data(), initial, bytes, "copy params");
      variable->push_back(owned_.back().as<float>());
    }
    grads.push_back(tower->grads.as<float>());
    streams.push_back(tower->stream.get());
  }
  training.runtime().synchronize();
  training.read_params_with(
      [this](float* out) {
        streams[0]->copy(out, params[0], bytes);
        streams[0]->synchronize();
      },
      [this](float* out) {
        streams[0]->copy(out, averages[0], bytes);
        streams[0]->synchronize();
      });
}

}  // namespace towers
