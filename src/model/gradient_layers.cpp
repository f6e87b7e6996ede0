// SPDX-License-Identifier: MIT
#include "model/gradient_layers.hpp"

#include "model/parameters.hpp"

namespace towers::model {

const std::vector<GradientLayer>& gradient_layers() {
  static const std::vector<GradientLayer> layers = [] {
    // parameter_layout() lists "layer/weights", "layer/biases" from conv1 to
    // softmax_linear: merge by layer, then reverse into backward order.
    std::vector<GradientLayer> forward;
    for (const ParameterView& view : parameter_layout()) {
      const std::string layer = view.name.substr(0, view.name.find('/'));
      if (forward.empty() || forward.back().name != layer) {
        forward.push_back({layer, view.offset, 0});
      }
      forward.back().count += view.count;
    }
    return std::vector<GradientLayer>(forward.rbegin(), forward.rend());
  }();
  return layers;
}

}  // namespace towers::model
