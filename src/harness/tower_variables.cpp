// SPDX-License-Identifier: MIT
#include "harness/tower_variables.hpp"

#include "model/parameters.hpp"

namespace towers {

TowerVariables::TowerVariables(TowerTraining& training) {
  constexpr std::size_t bytes = model::kNumParameters * sizeof(float);
  for (auto& tower : training.towers()) {
    for (std::vector<float*>* variable : {&params, &averages}) {
      owned_.push_back(tower->device->allocate(bytes));
      tower->stream->copy(owned_.back().data(), training.initial_params(), bytes, "copy params");
      variable->push_back(owned_.back().as<float>());
    }
    grads.push_back(tower->grads.as<float>());
    streams.push_back(tower->stream.get());
  }
  training.runtime().synchronize();
  training.read_params_with([this](float* out) {
    streams[0]->copy(out, params[0], bytes);
    streams[0]->synchronize();
  });
}

}  // namespace towers
