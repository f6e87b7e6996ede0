// SPDX-License-Identifier: MIT
// The model's layers in the order the backward pass finishes their gradients (chapter 6).
//
// The backward pass runs from the logits down, so softmax_linear's gradients are final
// first and conv1's last. Each layer's variables (weights, then biases) are adjacent in the
// flat buffer (parameters.hpp), so a layer's gradients are one contiguous range of it, and
// a run of consecutive layers is one range too: what an all-reduce bucket needs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace towers::model {

/// One layer's gradients inside the flat buffer.
struct GradientLayer {
  std::string name;        ///< "softmax_linear", "local4", "local3", "conv2", "conv1"
  std::size_t offset = 0;  ///< first element in the flat buffer
  std::size_t count = 0;   ///< elements (weights and biases)
};

/// The five layers, in the order their gradients become final: softmax_linear first,
/// conv1 last. Network::forward_backward calls its `layer_done` in this order.
const std::vector<GradientLayer>& gradient_layers();

}  // namespace towers::model
