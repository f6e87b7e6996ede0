// SPDX-License-Identifier: MIT
// Exercise 05 — your code goes here. See README.md.
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
  // TODO(1): split i into (n, iy, ix, c); channels vary fastest (see kernels/math/shape.hpp).
  // TODO(2): the output extent along a dimension is ceil(in / 2); the padding before is
  //   ((out - 1) * 2 + 3 - in) / 2 when positive, else 0.
  // TODO(3): visit the (at most 2 x 2) outputs whose 3 x 3 window covers (iy, ix): output
  //   oy's window covers padded rows oy * 2 .. oy * 2 + 2. Add dy[o] when argmax[o] == i.
  //   Stay inside the output; do not scan all outputs (that is O(size) per element).
  (void)i;
  (void)dy;
  (void)argmax;
  (void)in;
  return 0.0f;  // TODO: return the gathered sum
}

}  // namespace towers::exercises
