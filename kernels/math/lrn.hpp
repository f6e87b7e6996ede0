// SPDX-License-Identifier: MIT
// Local response normalization across channels (tf.nn.lrn in cifar10.py).
//
// For each pixel and channel c, over the window of channels c - r .. c + r clipped to
// the channels that exist:
//
//   scale[c] = bias + alpha * sum_{c' in window(c)} x[c']^2
//   y[c]     = x[c] * scale[c]^(-beta)
//
// alpha multiplies the plain sum; TensorFlow does not divide it by the window size.
// The forward pass stores `scale` for the backward pass, which is, with the window being
// symmetric (c' in window(c) exactly when c in window(c')):
//
//   dx[c] = dy[c] * scale[c]^(-beta)
//           - 2 * alpha * beta * x[c] * sum_{c' in window(c)} dy[c'] * y[c'] / scale[c']
//
// Tensors are seen as [pixels, channels] (NHWC with n, y, x merged into pixels).
#pragma once

#include <math.h>

#include "kernels/common.hpp"
#include "kernels/math/shape.hpp"

namespace towers::math {

/// The four constants of an LRN layer; the defaults are the CIFAR-10 model's.
struct LrnParams {
  int depth_radius = 4;           ///< r: the window is 2r + 1 = 9 channels
  float bias = 1.0f;              ///< added to the scaled sum of squares
  float alpha = 0.001f / 9.0f;    ///< multiplies the plain sum of squares
  float beta = 0.75f;             ///< exponent of the scale
};

/// One output of the LRN forward pass.
struct LrnForward {
  float y;      ///< the normalized value
  float scale;  ///< bias + alpha * (sum of squares over the window), kept for backward
};

/// scale^(-beta), the factor that normalizes a value. For the model's beta = 0.75 it is
/// computed as 1 / (sqrt(s) * sqrt(sqrt(s))): square roots, a product and a division,
/// each correctly rounded by IEEE arithmetic on the CPU and by CUDA (which rounds sqrtf
/// and division correctly unless built with --use_fast_math), so both backends get the
/// same bits; within 4 ulp of the exact power (powf: 1 ulp); and a loop of them
/// vectorizes, where powf is a library call per element. TensorFlow's CPU kernel avoids
/// pow too: rsqrt for beta = 0.5, exp(-beta * log s) for other values such as 0.75.
TOWERS_HD inline float lrn_factor(float scale, float beta) {
  if (beta == 0.75f) {
    const float root = sqrtf(scale);
    return 1.0f / (root * sqrtf(root));
  }
  return powf(scale, -beta);
}

/// Element `i` of LRN over x[pixels, channels].
TOWERS_HD inline LrnForward lrn_forward(Index i, const float* x, int channels, LrnParams p) {
  const int c = static_cast<int>(i % channels);
  const float* row = x + (i - c);  // this pixel's channels
  const int first = c - p.depth_radius < 0 ? 0 : c - p.depth_radius;
  const int last = c + p.depth_radius >= channels ? channels - 1 : c + p.depth_radius;
  float sum = 0.0f;
  for (int j = first; j <= last; ++j) sum += row[j] * row[j];
  const float scale = p.bias + p.alpha * sum;
  return LrnForward{x[i] * lrn_factor(scale, p.beta), scale};
}

/// Element `i` of dx for LRN over [pixels, channels], from the forward pass's x, y and
/// scale and the output gradient dy.
TOWERS_HD inline float lrn_backward(Index i, const float* x, const float* y, const float* scale,
                                    const float* dy, int channels, LrnParams p) {
  const int c = static_cast<int>(i % channels);
  const Index base = i - c;  // flat index of this pixel's channel 0
  const int first = c - p.depth_radius < 0 ? 0 : c - p.depth_radius;
  const int last = c + p.depth_radius >= channels ? channels - 1 : c + p.depth_radius;
  float cross = 0.0f;
  for (Index j = base + first; j <= base + last; ++j) cross += dy[j] * y[j] / scale[j];
  return dy[i] * lrn_factor(scale[i], p.beta) - 2.0f * p.alpha * p.beta * x[i] * cross;
}

}  // namespace towers::math
