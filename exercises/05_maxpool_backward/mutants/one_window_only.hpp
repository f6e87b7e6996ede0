// SPDX-License-Identifier: MIT
// mutant: visits only the output at py / 2, px / 2, missing overlapping windows
//
// The backward pass of 3 x 3, stride 2, SAME max pooling, written once as a TOWERS_HD
// function: the host loop of the grader calls it, and so could a CUDA kernel, unchanged.
#pragma once

#include "kernels/common.hpp"
#include "kernels/math/shape.hpp"

namespace towers::exercises {

/// Pooling window size (3 x 3) and stride (2) of the CIFAR-10 model.
inline constexpr int kWindow = 3;
/// Stride of the pooling windows.
inline constexpr int kStride = 2;

/// Element `i` of dx (NHWC, shape `in`): the sum of dy[o] over the outputs o whose
/// argmax[o] == i. dy and argmax have the output shape [batch, ceil(h/2), ceil(w/2), C];
/// argmax[o] is the flat input index of output o's maximum, recorded by the forward pass.
/// SAME padding puts (out - 1) * 2 + 3 - in padded cells around each dimension, half
/// (rounded down) before and the rest after.
TOWERS_HD inline float max_pool_input_grad(int i, const float* dy, const int* argmax,
                                           math::Nhwc in) {
  const int c = i % in.channels;
  const int ix = (i / in.channels) % in.width;
  const int iy = (i / (in.channels * in.width)) % in.height;
  const int n = i / (in.channels * in.width * in.height);
  const int out_h = (in.height + kStride - 1) / kStride, out_w = (in.width + kStride - 1) / kStride;
  const int pad_y = ((out_h - 1) * kStride + kWindow - in.height) / 2;  // never negative
  const int pad_x = ((out_w - 1) * kStride + kWindow - in.width) / 2;
  const math::Nhwc out{in.batch, out_h, out_w, in.channels};
  // In padded coordinates (py, px) output o's window covers o*2 .. o*2+2, so the outputs
  // that see py are py/2 - 1 and py/2 (the first only when its window reaches py).
  const int py = iy + pad_y, px = ix + pad_x;
  float sum = 0.0f;
  for (int oy = py / kStride; oy <= py / kStride; ++oy) {
    if (oy < 0 || oy >= out_h || py - oy * kStride >= kWindow) continue;
    for (int ox = px / kStride; ox <= px / kStride; ++ox) {
      if (ox < 0 || ox >= out_w || px - ox * kStride >= kWindow) continue;
      const int o = out.offset(n, oy, ox, c);
      if (argmax[o] == i) sum += dy[o];
    }
  }
  return sum;
}

}  // namespace towers::exercises
