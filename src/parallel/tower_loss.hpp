// SPDX-License-Identifier: MIT
// tower_loss: one tower's share of a training step, enqueued on the tower's stream.
#pragma once

#include <cstdint>

#include "parallel/tower.hpp"

namespace towers {

/// Enqueues on tower.stream: copy slice `tower.index` of the global batch (pinned host
/// images [towers * B, 24, 24, 3], labels [towers * B]) to the device, the forward pass
/// and loss (the tutorial's tower_loss), the backward pass into tower.grads
/// (compute_gradients), and a copy of the three losses to tower.losses. Returns at once.
void tower_loss(Tower& tower, const float* global_images, const std::int32_t* global_labels);

/// As above, with the parameters `params` ([kNumParameters] on the tower's device) instead
/// of the tower's replica: chapter 4's --input queue, whose towers own their parameters.
void tower_loss(Tower& tower, const float* params, const float* global_images,
                const std::int32_t* global_labels);

}  // namespace towers
