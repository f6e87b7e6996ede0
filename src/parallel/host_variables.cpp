// SPDX-License-Identifier: MIT
#include "parallel/host_variables.hpp"

#include <algorithm>

#include "model/parameters.hpp"

namespace towers {

HostVariables::HostVariables(Device& host_side)
    : params_(host_side.allocate_pinned(model::kNumParameters * sizeof(float))),
      averages_(model::kNumParameters) {}

void HostVariables::state_to_host(model::TrainingState& state) {
  state.params.assign(params(), params() + model::kNumParameters);
  state.moving_averages = averages_;
  state.optimizer_state.clear();
}

void HostVariables::params_to_host(float* host) {
  std::copy(params(), params() + model::kNumParameters, host);
}

void HostVariables::load_from_host(const model::TrainingState& state) {
  std::copy(state.params.begin(), state.params.end(), params());
  averages_ = state.moving_averages;
}

}  // namespace towers
