// SPDX-License-Identifier: MIT
// Elementwise ops: bias add, ReLU, fill, the tutorial's two parameter updates (SGD and
// the exponential moving average) and chapter 8's optimizers with state (momentum, Adam).
//
// Each function computes element `i` of its output from element `i` of its inputs, so
// the host loop and the CUDA grid-stride loop both write `out[i] = f(i, ...)`. Where an
// op updates a buffer in place, the function reads element i before it is overwritten by
// the same loop iteration, so in-place use is safe.
#pragma once

#include <math.h>

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

/// Element `i` of momentum * velocity + grad: the velocity of heavy-ball momentum
/// (tf.train.MomentumOptimizer's accumulator), the one float of state it keeps per
/// parameter. The parameter then moves by learning_rate * velocity (sgd_update with the
/// velocity as its gradient).
TOWERS_HD inline float momentum_velocity(Index i, const float* velocity, const float* grad,
                                         float momentum) {
  return momentum * velocity[i] + grad[i];
}

/// The scalars of one Adam step, the same for every element: kept together so the host
/// loop, the kernel and their callers pass one value, not four floats in an order to
/// get wrong.
struct AdamScalars {
  float step_size = 0;  ///< learning rate times the bias correction of this step
  float beta1 = 0.9f;   ///< decay of the first moment
  float beta2 = 0.999f; ///< decay of the second moment
  float epsilon = 1e-8f;  ///< keeps the division finite where v is 0
};

/// Element `i` of Adam's first moment, beta1 * m + (1 - beta1) * grad: a moving average
/// of the gradient (Kingma and Ba, 2015).
TOWERS_HD inline float adam_first_moment(Index i, const float* m, const float* grad, float beta1) {
  return beta1 * m[i] + (1.0f - beta1) * grad[i];
}

/// Element `i` of Adam's second moment, beta2 * v + (1 - beta2) * grad^2: a moving average
/// of the squared gradient, which sets each parameter's own step size.
TOWERS_HD inline float adam_second_moment(Index i, const float* v, const float* grad, float beta2) {
  return beta2 * v[i] + (1.0f - beta2) * (grad[i] * grad[i]);
}

/// Element `i` of w - step_size * m / (sqrt(v) + epsilon): Adam's step, with the bias
/// correction of both moments folded into step_size by the caller (one scalar per step,
/// as TensorFlow's AdamOptimizer does). sqrtf and the division are correctly rounded on
/// the CPU and in CUDA (nvcc's defaults), so both backends give the same bits.
TOWERS_HD inline float adam_step(Index i, const float* w, const float* m, const float* v,
                                 float step_size, float epsilon) {
  return w[i] - step_size * m[i] / (sqrtf(v[i]) + epsilon);
}

}  // namespace towers::math
