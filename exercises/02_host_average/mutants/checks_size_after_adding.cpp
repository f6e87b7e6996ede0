// SPDX-License-Identifier: MIT
// mutant: a gradient's size is checked only after it was added in: a shorter one is read one past its end, then refused
#include "average_gradients.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace towers::exercises {
namespace {

// Every tower must have the variables of tower 0, in the same order (sizes: see below).
void check_same_names(const std::vector<TowerGrads>& tower_grads) {
  if (tower_grads.empty()) throw std::invalid_argument("average_gradients: no towers");
  const TowerGrads& first = tower_grads[0];
  for (std::size_t t = 1; t < tower_grads.size(); ++t) {
    const TowerGrads& tower = tower_grads[t];
    if (tower.size() != first.size()) {
      throw std::invalid_argument("average_gradients: tower " + std::to_string(t) + " has " +
                                  std::to_string(tower.size()) + " variables, tower 0 has " +
                                  std::to_string(first.size()));
    }
    for (std::size_t v = 0; v < first.size(); ++v) {
      if (tower[v].var != first[v].var) {
        throw std::invalid_argument("average_gradients: variable " + std::to_string(v) +
                                    " of tower " + std::to_string(t) + " is " + tower[v].var +
                                    ", tower 0's is " + first[v].var);
      }
    }
  }
}

}  // namespace

std::vector<GradAndVar> average_gradients(const std::vector<TowerGrads>& tower_grads) {
  check_same_names(tower_grads);
  const float num_towers = static_cast<float>(tower_grads.size());
  std::vector<GradAndVar> average;
  for (std::size_t v = 0; v < tower_grads[0].size(); ++v) {
    GradAndVar mean{tower_grads[0][v].grad, tower_grads[0][v].var};
    for (std::size_t t = 1; t < tower_grads.size(); ++t) {
      const std::vector<float>& grad = tower_grads[t][v].grad;
      // The mistake: tower 0's size bounds the loop, and the sizes are compared afterwards.
      for (std::size_t j = 0; j < mean.grad.size(); ++j) mean.grad[j] += grad[j];
      if (grad.size() != mean.grad.size()) {
        throw std::invalid_argument("average_gradients: variable " + std::to_string(v) +
                                    " of tower " + std::to_string(t) + " has another size");
      }
    }
    for (float& g : mean.grad) g /= num_towers;
    average.push_back(std::move(mean));
  }
  return average;
}

}  // namespace towers::exercises
