// SPDX-License-Identifier: MIT
// Which optimizer chapter 8 trains with (--optimizer), and how much state it keeps.
//
// The tutorial's update is plain SGD, and its only per-parameter state is the moving
// average of every parameter (kept for evaluation, updated after each step). Chapter 8
// shards optimizer state, so it offers two optimizers that keep more of it: momentum (one
// velocity per parameter) and Adam (two moments per parameter). All three keep the
// moving averages as well, so the optimizer state per parameter is 1, 2 or 3 floats.
// Light on purpose (no runtime): ZeRO's closed form (src/parallel/zero_memory.hpp) reads
// the counts from here.
#pragma once

#include <string>

namespace towers::model {

/// The update rule: the tutorial's SGD, heavy-ball momentum, or Adam. The numbers are
/// written in checkpoints (model/checkpoint.hpp), so they never change.
enum class Optimizer {
  kSgd = 0,       ///< w -= lr * g, the tutorial's; no state of its own
  kMomentum = 1,  ///< heavy-ball momentum: one velocity per parameter
  kAdam = 2,      ///< Adam: the gradient's first and second moments per parameter
};

/// Floats of the optimizer's own state per parameter: 0 (SGD), 1 (momentum's velocity),
/// 2 (Adam's first and second moments). The moving averages are not counted here.
constexpr int optimizer_own_floats(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kSgd: return 0;
    case Optimizer::kMomentum: return 1;
    case Optimizer::kAdam: return 2;
  }
  return 0;
}

/// Floats of optimizer state per parameter, the moving average included: 1, 2 or 3.
constexpr int optimizer_state_floats(Optimizer optimizer) {
  return 1 + optimizer_own_floats(optimizer);
}

/// "sgd", "momentum" or "adam": the --optimizer value and the summary's `optimizer`.
const char* optimizer_name(Optimizer optimizer);

/// The optimizer named `name`; a UsageError saying which names exist for any other.
Optimizer parse_optimizer(const std::string& name);

}  // namespace towers::model
