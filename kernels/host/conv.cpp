// SPDX-License-Identifier: MIT
// Host loops for im2col and col2im (kernels/math/conv.hpp).
#include "kernels/host/kernels.hpp"
#include "kernels/math/conv.hpp"

namespace towers::host {

void im2col(const float* x, math::Nhwc s, int k, float* col) {
  const math::Index n = s.pixels() * math::im2col_columns(k, s.channels);  // col: [pixels, k*k*C]
  for (math::Index i = 0; i < n; ++i) col[i] = math::im2col(i, x, s, k);
}

void col2im(const float* dcol, math::Nhwc s, int k, float* dx) {
  const math::Index n = s.size();  // dx: [batch, height, width, channels]
  for (math::Index i = 0; i < n; ++i) dx[i] = math::col2im(i, dcol, s, k);
}

}  // namespace towers::host
