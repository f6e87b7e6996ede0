// SPDX-License-Identifier: MIT
#include "harness/tower_variables.hpp"

#include <utility>

#include "model/parameters.hpp"

namespace towers {

TowerVariables::TowerVariables(TowerTraining& training) {
  constexpr std::size_t bytes = model::kNumParameters * sizeof(float);
  // Both start from the run's initial values: --seed's, or the resumed checkpoint's. The
  // moving averages are the tutorial's only state kept for the update: the optimizer state
  // of chapter 8's memory ledger.
  struct Variable {
    std::vector<float*>* copies;
    const float* initial;
    MemoryCategory category;
  };
  const Variable variables[] = {
      {&params, training.initial_params(), MemoryCategory::kParameters},
      {&averages, training.initial_averages(), MemoryCategory::kOptimizerState}};
  for (auto& tower : training.towers()) {
    for (const Variable& variable : variables) {
      owned_.push_back(tower->device->allocate(bytes, variable.category));
      tower->stream->copy(owned_.back().data(), variable.initial, bytes, "copy params");
      variable.copies->push_back(owned_.back().as<float>());
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
