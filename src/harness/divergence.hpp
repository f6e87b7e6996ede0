// SPDX-License-Identifier: MIT
// The divergence guard: a run whose loss or parameters stop being finite stops at once,
// with TF's words ("Model diverged with loss = NaN"), and is never saved.
//
// The loss is checked every step (it is on the host anyway). A NaN weight can hide behind
// a ReLU and leave the loss finite, so the parameters are checked too: every
// kParameterCheckEvery steps (a copy to the host of ~4 MB) and before every save.
// Introduced in chapter 1.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace towers {

/// Steps between two checks of the parameters (and always before a save).
inline constexpr int kParameterCheckEvery = 100;

/// Thrown when training diverged; programs print it and exit with status 1.
class Diverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws Diverged("Model diverged with loss = NaN", or "= inf") when `loss` is not finite.
void check_loss(float loss, std::int64_t global_step);

/// True on the steps (counted from 1) after which the loops check the parameters.
inline bool parameter_check_due(std::int64_t steps_done) {
  return steps_done % kParameterCheckEvery == 0;
}

/// Throws Diverged naming the first non-finite value of `params` (host,
/// kNumParameters floats) by variable and index, e.g. "conv1/weights[17] = nan".
void check_parameters(const float* params, std::int64_t global_step);

/// Throws Diverged naming `optimizer` and the index of the first non-finite value of its
/// state (momentum's velocity, Adam's moments): Adam's second moment can overflow while
/// the parameters stay finite, and such a state is never saved.
void check_optimizer_state(const std::vector<float>& state, const std::string& optimizer,
                           std::int64_t global_step);

}  // namespace towers
