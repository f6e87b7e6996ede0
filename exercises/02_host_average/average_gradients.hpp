// SPDX-License-Identifier: MIT
// Exercise 02: average_gradients() on the host, as the tutorial's average_gradients()
// does on /cpu:0 (chapter 2).
//
// Each tower hands in one list of (gradient, variable) pairs, one pair per variable of the
// model, in the same order on every tower. The average is one list of pairs again: for
// each variable, the element-wise mean over towers of that variable's gradient, paired
// with the variable's name. This is the one place the towers meet.
#pragma once

#include <string>
#include <vector>

namespace towers::exercises {

/// One variable's gradient on one tower, like the tutorial's (grad, var) tuples.
struct GradAndVar {
  std::vector<float> grad;  ///< [size of the variable], may be empty
  std::string var;          ///< the variable's name, e.g. "conv1/weights"
};

/// One tower's gradients: one GradAndVar per variable of the model.
using TowerGrads = std::vector<GradAndVar>;

/// The element-wise mean over towers: result[v].grad[j] is the mean over t of
/// tower_grads[t][v].grad[j], and result[v].var is tower_grads[0][v].var.
/// The inputs are left unchanged. Throws std::invalid_argument when there are no towers,
/// or when two towers disagree on the number of variables, a variable's name or its size.
std::vector<GradAndVar> average_gradients(const std::vector<TowerGrads>& tower_grads);

}  // namespace towers::exercises
