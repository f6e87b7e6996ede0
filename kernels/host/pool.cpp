// SPDX-License-Identifier: MIT
// Host loops for max pooling (kernels/math/pool.hpp).
#include "kernels/host/kernels.hpp"
#include "kernels/math/pool.hpp"

namespace towers::host {

void max_pool_forward(const float* x, math::Nhwc in, float* y, int* argmax) {
  const math::Index n = math::max_pool_output_shape(in).size();  // y, argmax: [batch, oh, ow, C]
  for (math::Index i = 0; i < n; ++i) {
    const math::PoolMax m = math::max_pool_forward(i, x, in);
    y[i] = m.value;
    argmax[i] = m.index;
  }
}

void max_pool_backward(const float* dy, const int* argmax, math::Nhwc in, float* dx) {
  const math::Index n = in.size();  // dx: [batch, height, width, C]
  for (math::Index i = 0; i < n; ++i) dx[i] = math::max_pool_backward(i, dy, argmax, in);
}

}  // namespace towers::host
