// SPDX-License-Identifier: MIT
// mutant: wrong input is refused with std::runtime_error, not the std::invalid_argument the interface promises
#include "average_gradients.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace towers::exercises {
namespace {

// Every tower must have the variables of tower 0, in the same order and of the same size.
void check_same_variables(const std::vector<TowerGrads>& tower_grads) {
  if (tower_grads.empty()) throw std::runtime_error("average_gradients: no towers");
  const TowerGrads& first = tower_grads[0];
  for (std::size_t t = 1; t < tower_grads.size(); ++t) {
    const TowerGrads& tower = tower_grads[t];
    if (tower.size() != first.size()) {
      throw std::runtime_error("average_gradients: tower " + std::to_string(t) + " has " +
                                  std::to_string(tower.size()) + " variables, tower 0 has " +
                                  std::to_string(first.size()));
    }
    for (std::size_t v = 0; v < first.size(); ++v) {
      if (tower[v].var != first[v].var || tower[v].grad.size() != first[v].grad.size()) {
        throw std::runtime_error("average_gradients: variable " + std::to_string(v) +
                                    " of tower " + std::to_string(t) + " (" + tower[v].var +
                                    ") differs in name or size from tower 0's (" +
                                    first[v].var + ")");
      }
    }
  }
}

}  // namespace

std::vector<GradAndVar> average_gradients(const std::vector<TowerGrads>& tower_grads) {
  check_same_variables(tower_grads);
  const float num_towers = static_cast<float>(tower_grads.size());
  std::vector<GradAndVar> average;
  for (std::size_t v = 0; v < tower_grads[0].size(); ++v) {
    // grad: [size of variable v]; summed in tower order, g0 + g1 + ... + g(N-1).
    GradAndVar mean{tower_grads[0][v].grad, tower_grads[0][v].var};
    for (std::size_t t = 1; t < tower_grads.size(); ++t) {
      const std::vector<float>& grad = tower_grads[t][v].grad;
      for (std::size_t j = 0; j < grad.size(); ++j) mean.grad[j] += grad[j];
    }
    for (float& g : mean.grad) g /= num_towers;
    average.push_back(std::move(mean));
  }
  return average;
}

}  // namespace towers::exercises
