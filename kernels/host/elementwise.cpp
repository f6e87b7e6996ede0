// SPDX-License-Identifier: MIT
// Host loops for the elementwise ops (kernels/math/elementwise.hpp), each split over the
// op threads (parallel.hpp) in ranges of whole elements.
#include <cstddef>
#include <cstdint>

#include "kernels/host/kernels.hpp"
#include "kernels/host/parallel.hpp"
#include "kernels/math/elementwise.hpp"

namespace towers::host {
namespace {

// A part gets at least this many elements: a few microseconds of work, worth a helper.
constexpr std::int64_t kMinElementsPerPart = std::int64_t{1} << 15;

// Calls element(i) for every i in [0, n), split over the op threads.
template <typename Element>
void for_each_index(math::Index n, Element element) {
  parallel_for(n, kMinElementsPerPart, [&](std::int64_t begin, std::int64_t end) {
    for (math::Index i = begin; i < end; ++i) element(i);
  });
}

}  // namespace

void bias_add(int rows, int channels, const float* bias, float* y) {
  // y: [rows, channels], one row at a time. This is math::bias_add with its bias index
  // i % channels known to be c: the per-element division it costs (more than the add)
  // is gone, and the row vectorizes. Same sums, bit for bit (bench_host_ops checks).
  const std::int64_t min_rows = kMinElementsPerPart / (channels > 0 ? channels : 1) + 1;
  parallel_for(rows, min_rows, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      float* y_row = y + row * channels;
      for (int c = 0; c < channels; ++c) y_row[c] = y_row[c] + bias[c];
    }
  });
}

void relu_forward(math::Index n, const float* x, float* y) {
  for_each_index(n, [=](math::Index i) { y[i] = math::relu_forward(i, x); });
}

void relu_backward(math::Index n, const float* y, const float* dy, float* dx) {
  for_each_index(n, [=](math::Index i) { dx[i] = math::relu_backward(i, y, dy); });
}

void fill(math::Index n, float value, float* x) {
  for_each_index(n, [=](math::Index i) { x[i] = value; });
}

void sgd_update(math::Index n, float learning_rate, const float* grad, float* w) {
  for_each_index(n, [=](math::Index i) { w[i] = math::sgd_update(i, w, grad, learning_rate); });
}

void ema_update(math::Index n, float decay, const float* var, float* shadow) {
  for_each_index(n, [=](math::Index i) { shadow[i] = math::ema_update(i, shadow, var, decay); });
}

void momentum_update(math::Index n, float learning_rate, float momentum, const float* grad,
                     float* velocity, float* w) {
  // One pass, velocity first: element i of w reads the velocity this iteration just wrote.
  for_each_index(n, [=](math::Index i) {
    velocity[i] = math::momentum_velocity(i, velocity, grad, momentum);
    w[i] = math::sgd_update(i, w, velocity, learning_rate);
  });
}

void adam_update(math::Index n, math::AdamScalars s, const float* grad, float* m, float* v,
                 float* w) {
  for_each_index(n, [=](math::Index i) {
    m[i] = math::adam_first_moment(i, m, grad, s.beta1);
    v[i] = math::adam_second_moment(i, v, grad, s.beta2);
    w[i] = math::adam_step(i, w, m, v, s.step_size, s.epsilon);
  });
}

}  // namespace towers::host
