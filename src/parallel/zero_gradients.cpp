// SPDX-License-Identifier: MIT
#include "parallel/zero_gradients.hpp"

#include "model/parameters.hpp"

namespace towers {

TransientGradients::TransientGradients(std::vector<std::unique_ptr<Tower>>& towers,
                                       bool transient)
    : towers_(towers), transient_(transient) {
  if (transient_) end_step();
}

std::vector<float*> TransientGradients::begin_step() {
  std::vector<float*> grads;
  for (auto& tower : towers_) {
    if (transient_) {
      tower->grads = tower->device->allocate(model::kNumParameters * sizeof(float),
                                             MemoryCategory::kGradients);
    }
    grads.push_back(tower->grads.as<float>());
  }
  return grads;
}

void TransientGradients::end_step() {
  if (!transient_) return;
  // The streams are done with them (the caller synchronized): freeing cannot race.
  for (auto& tower : towers_) tower->grads = Buffer();
}

}  // namespace towers
