// SPDX-License-Identifier: MIT
// Exercise 02 — your code goes here. See README.md and average_gradients.hpp.
#include "average_gradients.hpp"

#include <stdexcept>

#include "exercises/todo.hpp"

namespace towers::exercises {

std::vector<GradAndVar> average_gradients(const std::vector<TowerGrads>& tower_grads) {
  // TODO(1): check the input. No towers, or towers that disagree on the number of
  //   variables, a variable's name or its size, throw std::invalid_argument with a
  //   sentence that names the tower and the variable.
  // TODO(2): for each variable v, sum tower_grads[t][v].grad over the towers, then divide
  //   by the number of towers. Pair the mean with the variable's name.
  (void)tower_grads;
  todo("exercise 02: write average_gradients() in exercises/02_host_average/stub.cpp");
}

}  // namespace towers::exercises
