// SPDX-License-Identifier: MIT
// Host loops for the elementwise ops (kernels/math/elementwise.hpp).
#include <cstddef>

#include "kernels/host/kernels.hpp"
#include "kernels/math/elementwise.hpp"

namespace towers::host {

void bias_add(int rows, int channels, const float* bias, float* y) {
  // y: [rows, channels], one row at a time. This is math::bias_add with its bias index
  // i % channels known to be c: the per-element division it costs (more than the add)
  // is gone, and the row vectorizes. Same sums, bit for bit (bench_host_ops checks).
  for (int row = 0; row < rows; ++row) {
    float* y_row = y + static_cast<std::size_t>(row) * channels;
    for (int c = 0; c < channels; ++c) y_row[c] = y_row[c] + bias[c];
  }
}

void relu_forward(int n, const float* x, float* y) {
  for (int i = 0; i < n; ++i) y[i] = math::relu_forward(i, x);
}

void relu_backward(int n, const float* y, const float* dy, float* dx) {
  for (int i = 0; i < n; ++i) dx[i] = math::relu_backward(i, y, dy);
}

void fill(int n, float value, float* x) {
  for (int i = 0; i < n; ++i) x[i] = value;
}

void sgd_update(int n, float learning_rate, const float* grad, float* w) {
  for (int i = 0; i < n; ++i) w[i] = math::sgd_update(i, w, grad, learning_rate);
}

void ema_update(int n, float decay, const float* var, float* shadow) {
  for (int i = 0; i < n; ++i) shadow[i] = math::ema_update(i, shadow, var, decay);
}

}  // namespace towers::host
