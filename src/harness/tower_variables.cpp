// SPDX-License-Identifier: MIT
#include "harness/tower_variables.hpp"

#include <utility>

#include "model/parameters.hpp"

namespace towers {

TowerVariables::TowerVariables(TowerTraining& training) {
  constexpr std::size_t bytes = model::kNumParameters * sizeof(float);
  for (auto& tower : training.towers()) {
    // The moving averages are the tutorial's only state kept for the update: the
    // optimizer state of chapter 8's memory ledger.
    for (auto [variable, category] : {std::pair{&params, MemoryCategory::kParameters},
                                      std::pair{&averages, MemoryCategory::kOptimizerState}}) {
      owned_.push_back(tower->device->allocate(bytes, category));
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
