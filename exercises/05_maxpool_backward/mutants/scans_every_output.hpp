// SPDX-License-Identifier: MIT
// mutant: scans every output for argmax[o] == i: the same dx, but a pass over all of dy per element (quadratic)
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

/// Element `i` of dx: the sum of dy[o] over the outputs o whose argmax[o] == i, found by
/// looking at every output of the batch (argmax is the forward pass's record, so only the
/// outputs whose windows cover i can name it).
TOWERS_HD inline float max_pool_input_grad(int i, const float* dy, const int* argmax,
                                           math::Nhwc in) {
  const int out_h = (in.height + kStride - 1) / kStride, out_w = (in.width + kStride - 1) / kStride;
  const math::Nhwc out{in.batch, out_h, out_w, in.channels};
  float sum = 0.0f;
  for (math::Index o = 0; o < out.size(); ++o) {
    if (argmax[o] == i) sum += dy[o];
  }
  return sum;
}

}  // namespace towers::exercises
