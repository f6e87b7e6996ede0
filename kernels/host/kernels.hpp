// SPDX-License-Identifier: MIT
// Host loops: every op of kernels/math run over its index space on the CPU.
//
// Each function is the host twin of the CUDA launcher of the same name in
// kernels/cuda/kernels.hpp: the same arguments (without the launch context) and the same
// math function per element, with two exceptions that give the same bits by another
// route: lrn (computes each pixel's squares once, then sums each window in the same
// order) and bias_add (walks rows instead of dividing each index); their .cpp files say
// how, and tests/ops compares them with the math functions bit for bit. The host
// backend's streams call these on their worker threads; tests call them directly as the
// oracle for the CUDA kernels. Pointers are host memory; they run on the calling thread
// and return when done.
#pragma once

#include "kernels/math/elementwise.hpp"
#include "kernels/math/lrn.hpp"
#include "kernels/math/shape.hpp"

namespace towers::host {

/// col[pixels, k*k*C] = im2col(x) for x of shape `s` (NHWC); see math::im2col.
void im2col(const float* x, math::Nhwc s, int k, float* col);
/// dx (shape `s`) = col2im(dcol): the gradient of im2col; see math::col2im.
void col2im(const float* dcol, math::Nhwc s, int k, float* dx);

/// y[rows, channels] += bias[channels], in place.
void bias_add(int rows, int channels, const float* bias, float* y);
/// y[n] = max(x, 0); y may equal x.
void relu_forward(math::Index n, const float* x, float* y);
/// dx[n] = dy where y > 0, else 0; dx may equal dy.
void relu_backward(math::Index n, const float* y, const float* dy, float* dx);
/// x[n] = value.
void fill(math::Index n, float value, float* x);
/// w[n] -= learning_rate * grad, in place.
void sgd_update(math::Index n, float learning_rate, const float* grad, float* w);
/// shadow[n] -= (1 - decay) * (shadow - var), in place.
void ema_update(math::Index n, float decay, const float* var, float* shadow);
/// velocity[n] = momentum * velocity + grad, then w[n] -= learning_rate * velocity.
void momentum_update(math::Index n, float learning_rate, float momentum, const float* grad,
                     float* velocity, float* w);
/// Adam: m[n] and v[n] (the gradient's first and second moments) updated with beta1 and
/// beta2, then w[n] -= step_size * m / (sqrt(v) + epsilon).
void adam_update(math::Index n, math::AdamScalars s, const float* grad, float* m, float* v,
                 float* w);

/// Max pooling 3x3/2 SAME of x (shape `in`) into y and argmax (shape
/// math::max_pool_output_shape(in)).
void max_pool_forward(const float* x, math::Nhwc in, float* y, int* argmax);
/// dx (shape `in`) from dy and argmax (shape math::max_pool_output_shape(in)).
void max_pool_backward(const float* dy, const int* argmax, math::Nhwc in, float* dx);

/// LRN over x[pixels, channels] into y and scale (both [pixels, channels]).
void lrn_forward(int pixels, int channels, math::LrnParams p, const float* x, float* y,
                 float* scale);
/// dx[pixels, channels] of LRN from the forward pass's x, y, scale and the gradient dy.
void lrn_backward(int pixels, int channels, math::LrnParams p, const float* x, const float* y,
                  const float* scale, const float* dy, float* dx);

/// Per-example loss[batch] and dlogits[batch, classes] of the batch-mean softmax
/// cross-entropy of logits[batch, classes] with labels[batch].
void softmax_cross_entropy(int batch, int classes, const float* logits, const int* labels,
                           float* loss, float* dlogits);
/// correct[batch]: 1 where the label is a top-1 logit, else 0 (tf.nn.in_top_k, k = 1).
void top1_correct(int batch, int classes, const float* logits, const int* labels,
                  float* correct);

}  // namespace towers::host
