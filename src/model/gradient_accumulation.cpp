// SPDX-License-Identifier: MIT
// Gradient accumulation, as elementwise ops: the order is the header's contract.
#include "model/gradient_accumulation.hpp"

#include "model/ops.hpp"

namespace towers::model {

void clear_gradient_sum(Stream& stream, int count, float* sum) {
  ops::fill(stream, count, 0.0f, sum);
}

void add_micro_batch_gradients(Stream& stream, int count, const float* grads, float* sum) {
  // 1 * g is exactly g, so this is sum + g rounded once, on either backend.
  ops::axpy(stream, count, 1.0f, grads, sum);
}

void finish_gradient_mean(Stream& stream, int count, int micro_batches, float* sum) {
  if (micro_batches == 1) return;  // 1/1 would change nothing
  ops::scal(stream, count, 1.0f / static_cast<float>(micro_batches), sum);
}

void apply_gradients_range(Stream& stream, float lr, int count, const float* grads, float* params) {
  ops::sgd_update(stream, count, lr, grads, params);
}

}  // namespace towers::model
