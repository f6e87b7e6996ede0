// SPDX-License-Identifier: MIT
#include "harness/divergence.hpp"

#include <cmath>
#include <string>

#include "model/parameters.hpp"

namespace towers {

namespace {

std::string value_text(float value) {
  if (std::isnan(value)) return "NaN";
  return value > 0 ? "inf" : "-inf";
}

}  // namespace

void check_loss(float loss, std::int64_t global_step) {
  if (std::isfinite(loss)) return;
  throw Diverged("Model diverged with loss = " + value_text(loss) + " at step " +
                 std::to_string(global_step) + "; nothing from this step was saved.");
}

void check_parameters(const float* params, std::int64_t global_step) {
  for (const model::ParameterView& view : model::parameter_layout()) {
    for (std::size_t i = 0; i < view.count; ++i) {
      const float value = params[view.offset + i];
      if (std::isfinite(value)) continue;
      throw Diverged("Model diverged with " + view.name + "[" + std::to_string(i) + "] = " +
                     value_text(value) + " after step " + std::to_string(global_step) +
                     "; nothing from this step was saved.");
    }
  }
}

void check_optimizer_state(const std::vector<float>& state, const std::string& optimizer,
                           std::int64_t global_step) {
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (std::isfinite(state[i])) continue;
    throw Diverged("Model diverged: --optimizer " + optimizer + "'s state[" + std::to_string(i) +
                   "] = " + value_text(state[i]) + " after step " + std::to_string(global_step) +
                   "; nothing from this step was saved.");
  }
}

}  // namespace towers
