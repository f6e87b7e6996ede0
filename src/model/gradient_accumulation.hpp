// SPDX-License-Identifier: MIT
// Gradient accumulation: one update from m micro-batches (chapter 1's --accumulate m,
// chapter 9's pipeline stages).
//
// A batch of B images is cut into m micro-batches of B/m; each one's forward and backward
// writes the gradient of its own mean loss, and the update uses their mean:
//
//     sum = 0;  sum += g_0;  sum += g_1;  ...  sum += g_(m-1);  sum *= 1/m
//
// in micro-batch order, one elementwise op at a time. Float addition is not associative,
// so this order *is* the contract: every path that runs these three functions in this
// order over the same micro-batches gets the same bits, element by element, whether it
// sums the whole flat buffer (one device) or one stage's range of it (a pipeline stage,
// whose backwards also run in micro-batch order). It is not the bits of one batch of B:
// that mean is summed inside the loss over all B images at once, in another order.
#pragma once

#include "runtime/stream.hpp"

namespace towers::model {

/// Enqueues sum[0..count) = 0, before the first micro-batch.
void clear_gradient_sum(Stream& stream, int count, float* sum);

/// Enqueues sum += grads over count floats: one micro-batch's gradients, added in order.
void add_micro_batch_gradients(Stream& stream, int count, const float* grads, float* sum);

/// Enqueues sum *= 1/micro_batches: the mean, after the last micro-batch was added.
void finish_gradient_mean(Stream& stream, int count, int micro_batches, float* sum);

/// Enqueues params -= lr * grads over count floats: apply_gradients() on a range of the
/// flat buffer (a pipeline stage updates only its own layers' variables).
void apply_gradients_range(Stream& stream, float lr, int count, const float* grads, float* params);

}  // namespace towers::model
