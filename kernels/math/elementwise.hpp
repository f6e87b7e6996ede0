// SPDX-License-Identifier: MIT
// Elementwise ops: bias add, ReLU, fill, and the two parameter updates (SGD and the
// exponential moving average).
//
// Each function computes element `i` of its output from element `i` of its inputs, so
// the host loop and the CUDA grid-stride loop both write `out[i] = f(i, ...)`. Where an
// op updates a buffer in place, the function reads element i before it is overwritten by
// the same loop iteration, so in-place use is safe.
#pragma once

#include "kernels/common.hpp"
#include "kernels/math/shape.hpp"

namespace towers::math {

/// Element `i` of y[rows, channels] + bias[channels] (bias broadcast over rows).
TOWERS_HD inline float bias_add(Index i, const float* y, const float* bias, int channels) {
  return y[i] + bias[i % channels];
}

/// Element `i` of relu(x) = max(x, 0).
TOWERS_HD inline float relu_forward(Index i, const float* x) { return x[i] > 0.0f ? x[i] : 0.0f; }

/// Element `i` of dx = dy where the ReLU's output y was positive, else 0. Uses the output,
/// as TensorFlow's ReluGrad does; y > 0 exactly where the input was > 0, so at x = 0 the
/// gradient is 0. dy[i] is read whatever y[i] is: a select, not a branch, so the host loop
/// needs no (unpredictable: half the outputs are 0) branch per element and vectorizes.
TOWERS_HD inline float relu_backward(Index i, const float* y, const float* dy) {
  const float gradient = dy[i];
  return y[i] > 0.0f ? gradient : 0.0f;
}

/// Element `i` of w - learning_rate * grad: one step of plain gradient descent
/// (tf.train.GradientDescentOptimizer).
TOWERS_HD inline float sgd_update(Index i, const float* w, const float* grad, float learning_rate) {
  return w[i] - learning_rate * grad[i];
}

/// Element `i` of shadow - (1 - decay) * (shadow - var): one update of an exponential
/// moving average, written as tf.train.ExponentialMovingAverage computes it.
TOWERS_HD inline float ema_update(Index i, const float* shadow, const float* var, float decay) {
  return shadow[i] - (1.0f - decay) * (shadow[i] - var[i]);
}

}  // namespace towers::math
