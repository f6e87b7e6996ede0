// SPDX-License-Identifier: MIT
#include "harness/step_scalars.hpp"

namespace towers {

StepScalars::StepScalars(Device& device)
    : on_host_(device.allocate_pinned(2 * sizeof(float))),
      on_device_(device.allocate(2 * sizeof(float))) {
  set(0.0f, 0.0f);
}

void StepScalars::set(float learning_rate, float decay) {
  on_host_.as<float>()[0] = learning_rate;
  on_host_.as<float>()[1] = decay;
}

void StepScalars::copy_to_device(Stream& stream) {
  stream.copy(on_device_.data(), on_host_.data(), 2 * sizeof(float), "copy step scalars");
}

}  // namespace towers
