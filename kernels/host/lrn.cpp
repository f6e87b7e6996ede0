// SPDX-License-Identifier: MIT
// Host loops for local response normalization (kernels/math/lrn.hpp).
#include "kernels/host/kernels.hpp"
#include "kernels/math/lrn.hpp"

namespace towers::host {

void lrn_forward(int pixels, int channels, math::LrnParams p, const float* x, float* y,
                 float* scale) {
  const int n = pixels * channels;  // x, y, scale: [pixels, channels]
  for (int i = 0; i < n; ++i) {
    const math::LrnForward out = math::lrn_forward(i, x, channels, p);
    y[i] = out.y;
    scale[i] = out.scale;
  }
}

void lrn_backward(int pixels, int channels, math::LrnParams p, const float* x, const float* y,
                  const float* scale, const float* dy, float* dx) {
  const int n = pixels * channels;
  for (int i = 0; i < n; ++i) dx[i] = math::lrn_backward(i, x, y, scale, dy, channels, p);
}

}  // namespace towers::host
