// SPDX-License-Identifier: MIT
// Every host loop gives, bit for bit, what its kernels/math function computes one element
// at a time (what a CUDA thread computes). Most loops call the math function per element;
// LRN, bias_add and the four ops of src/model/ops_fast_host.cpp reach the same bits by a
// CPU-friendly route, so an edit to kernels/math that only one route follows fails here
// (bench_host_ops times the same comparison but is not a test). Shapes: odd channel
// counts, so vector loops meet their tails, and the model's; LRN also with a beta other
// than 0.75 (the powf path) and a window wider than the channels; the loops that split
// the batch over the op threads run on one thread and on three.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../model/device_io.hpp"
#include "kernels/host/kernels.hpp"
#include "kernels/math/conv.hpp"
#include "kernels/math/elementwise.hpp"
#include "kernels/math/lrn.hpp"
#include "kernels/math/pool.hpp"
#include "kernels/math/softmax.hpp"
#include "model/ops_fast_host.hpp"
#include "op_threads.hpp"

namespace towers {
namespace {

using math::Index;
using math::Nhwc;

std::vector<float> random_values(Index n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

// Fails naming the first element whose bits differ (so -0.0f and 0.0f count as different).
template <typename T>
void expect_same_bits(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      FAIL() << what << ": element " << i << " is " << got[i] << ", math gives " << want[i];
    }
  }
}

const std::vector<Nhwc> kShapes = {{2, 5, 7, 13}, {3, 6, 6, 3}, {2, 12, 12, 64}};
const std::vector<int> kThreads = {1, 3};

TEST(HostMath, LrnForwardAndBackward) {
  math::LrnParams beta_half;
  beta_half.beta = 0.5f;
  math::LrnParams wide;
  wide.depth_radius = 20;
  for (const math::LrnParams& p : {math::LrnParams{}, beta_half, wide}) {
    for (const Nhwc& s : kShapes) {
      const int pixels = static_cast<int>(s.pixels()), c = s.channels;
      const Index n = s.size();
      const auto x = random_values(n, 1, 0.0f, 3.0f), dy = random_values(n, 2);
      std::vector<float> y_math(n), scale_math(n), dx_math(n);
      for (Index i = 0; i < n; ++i) {
        const math::LrnForward o = math::lrn_forward(i, x.data(), c, p);
        y_math[i] = o.y;
        scale_math[i] = o.scale;
      }
      for (Index i = 0; i < n; ++i) {
        dx_math[i] = math::lrn_backward(i, x.data(), y_math.data(), scale_math.data(), dy.data(), c, p);
      }
      for (int threads : kThreads) {
        testing::OpThreads scope(threads);
        const std::string what = "C=" + std::to_string(c) + " beta=" + std::to_string(p.beta) +
                                 " r=" + std::to_string(p.depth_radius) + " threads=" +
                                 std::to_string(threads);
        std::vector<float> y(n), scale(n), dx(n);
        host::lrn_forward(pixels, c, p, x.data(), y.data(), scale.data());
        expect_same_bits(y, y_math, "lrn_forward y " + what);
        expect_same_bits(scale, scale_math, "lrn_forward scale " + what);
        host::lrn_backward(pixels, c, p, x.data(), y_math.data(), scale_math.data(), dy.data(), dx.data());
        expect_same_bits(dx, dx_math, "lrn_backward " + what);
      }
    }
  }
}

TEST(HostMath, ElementwiseOps) {
  for (const Nhwc& s : kShapes) {
    const int rows = static_cast<int>(s.pixels()), c = s.channels;
    const Index n = s.size();
    const auto x = random_values(n, 3), dy = random_values(n, 4), bias = random_values(c, 5);
    for (int threads : kThreads) {
      testing::OpThreads scope(threads);
      const std::string what = " C=" + std::to_string(c) + " threads=" + std::to_string(threads);
      std::vector<float> want(n), got = x;
      for (Index i = 0; i < n; ++i) want[i] = math::bias_add(i, x.data(), bias.data(), c);
      host::bias_add(rows, c, bias.data(), got.data());
      expect_same_bits(got, want, "bias_add" + what);

      for (Index i = 0; i < n; ++i) want[i] = math::relu_forward(i, x.data());
      host::relu_forward(n, x.data(), got.data());
      expect_same_bits(got, want, "relu_forward" + what);

      for (Index i = 0; i < n; ++i) want[i] = math::relu_backward(i, x.data(), dy.data());
      host::relu_backward(n, x.data(), dy.data(), got.data());
      expect_same_bits(got, want, "relu_backward" + what);

      for (Index i = 0; i < n; ++i) want[i] = math::sgd_update(i, x.data(), dy.data(), 0.1f);
      got = x;
      host::sgd_update(n, 0.1f, dy.data(), got.data());
      expect_same_bits(got, want, "sgd_update" + what);

      for (Index i = 0; i < n; ++i) want[i] = math::ema_update(i, x.data(), dy.data(), 0.9999f);
      got = x;
      host::ema_update(n, 0.9999f, dy.data(), got.data());
      expect_same_bits(got, want, "ema_update" + what);

      // Chapter 8's optimizers: the host loop against the per-element math, state included.
      {
        std::vector<float> velocity = dy, want_velocity(n);
        for (Index i = 0; i < n; ++i) {
          want_velocity[i] = math::momentum_velocity(i, dy.data(), x.data(), 0.9f);
          want[i] = math::sgd_update(i, x.data(), want_velocity.data(), 0.01f);
        }
        got = x;
        host::momentum_update(n, 0.01f, 0.9f, x.data(), velocity.data(), got.data());
        expect_same_bits(velocity, want_velocity, "momentum velocity" + what);
        expect_same_bits(got, want, "momentum_update" + what);
      }
      {
        math::AdamScalars s;
        s.step_size = 0.001f;
        std::vector<float> m = dy, v(n), want_m(n), want_v(n);
        for (Index i = 0; i < n; ++i) v[i] = dy[i] * dy[i];
        for (Index i = 0; i < n; ++i) {
          want_m[i] = math::adam_first_moment(i, m.data(), x.data(), s.beta1);
          want_v[i] = math::adam_second_moment(i, v.data(), x.data(), s.beta2);
          want[i] = math::adam_step(i, x.data(), want_m.data(), want_v.data(), s.step_size,
                                    s.epsilon);
        }
        got = x;
        host::adam_update(n, s, x.data(), m.data(), v.data(), got.data());
        expect_same_bits(m, want_m, "adam m" + what);
        expect_same_bits(v, want_v, "adam v" + what);
        expect_same_bits(got, want, "adam_update" + what);
      }
    }
  }
}

TEST(HostMath, SoftmaxCrossEntropyAndTop1) {
  const int batch = 7, classes = 10;
  const auto logits = random_values(batch * classes, 6, -4.0f, 4.0f);
  const std::vector<int> labels = {0, 9, 3, 3, 5, 1, 8};
  std::vector<float> loss_math(batch), d_math(batch * classes), correct_math(batch);
  for (int b = 0; b < batch; ++b) {
    math::softmax_cross_entropy(b, logits.data(), labels.data(), batch, classes, loss_math.data(),
                                d_math.data());
    correct_math[b] = math::top1_correct(b, logits.data(), labels.data(), classes);
  }
  std::vector<float> loss(batch), d(batch * classes), correct(batch);
  host::softmax_cross_entropy(batch, classes, logits.data(), labels.data(), loss.data(), d.data());
  host::top1_correct(batch, classes, logits.data(), labels.data(), correct.data());
  expect_same_bits(loss, loss_math, "softmax loss");
  expect_same_bits(d, d_math, "softmax dlogits");
  expect_same_bits(correct, correct_math, "top1_correct");
}

// The model's conv and pool ops: the kernels/host loops, and the ops_fast_host pooling
// loops (run through a host stream, as the model runs them), each against the math per
// element. The host's implicit convolution has tests of its own (implicit_conv_test.cpp).
TEST(HostMath, ConvAndPoolOpsAndTheirFastTwins) {
  for (const Nhwc& s : kShapes) {
    for (int k : {3, 5}) {
      const Index cols = s.pixels() * math::im2col_columns(k, s.channels);
      const auto x = random_values(s.size(), 7), dcol = random_values(cols, 8);
      std::vector<float> col_math(cols), dx_math(s.size());
      for (Index i = 0; i < cols; ++i) col_math[i] = math::im2col(i, x.data(), s, k);
      for (Index i = 0; i < s.size(); ++i) dx_math[i] = math::col2im(i, dcol.data(), s, k);
      for (int threads : kThreads) {
        testing::OpThreads scope(threads);
        const std::string what = " C=" + std::to_string(s.channels) + " k=" + std::to_string(k) +
                                 " threads=" + std::to_string(threads);
        std::vector<float> col(cols), dx(s.size());
        host::im2col(x.data(), s, k, col.data());
        expect_same_bits(col, col_math, "im2col" + what);
        host::col2im(dcol.data(), s, k, dx.data());
        expect_same_bits(dx, dx_math, "col2im" + what);
      }
    }
    // Ties included: values on a coarse grid, so windows hold equal maxima.
    auto x = random_values(s.size(), 9);
    for (float& v : x) v = static_cast<float>(static_cast<int>(v * 4)) / 4;
    const Nhwc out = math::max_pool_output_shape(s);
    const auto dy = random_values(out.size(), 10);
    std::vector<float> y_math(out.size()), dx_math(s.size());
    std::vector<int> argmax_math(out.size());
    for (Index i = 0; i < out.size(); ++i) {
      const math::PoolMax m = math::max_pool_forward(i, x.data(), s);
      y_math[i] = m.value;
      argmax_math[i] = m.index;
    }
    for (Index i = 0; i < s.size(); ++i) {
      dx_math[i] = math::max_pool_backward(i, dy.data(), argmax_math.data(), s);
    }
    for (int threads : kThreads) {
      testing::OpThreads scope(threads);
      const std::string what = " C=" + std::to_string(s.channels) + " threads=" + std::to_string(threads);
      std::vector<float> y(out.size()), dx(s.size());
      std::vector<int> argmax(out.size());
      host::max_pool_forward(x.data(), s, y.data(), argmax.data());
      expect_same_bits(y, y_math, "max_pool_forward" + what);
      expect_same_bits(argmax, argmax_math, "max_pool_forward argmax" + what);
      host::max_pool_backward(dy.data(), argmax_math.data(), s, dx.data());
      expect_same_bits(dx, dx_math, "max_pool_backward" + what);

      model::testing::DeviceIo io(Backend::kHost);
      float* y_fast = io.upload(std::vector<float>(out.size(), 7.0f));
      int* argmax_fast = io.upload(std::vector<int>(out.size(), -7));
      float* dx_fast = io.upload(std::vector<float>(s.size(), 7.0f));
      ops::max_pool_forward_fast(io.stream(), io.upload(x), s, y_fast, argmax_fast);
      ops::max_pool_backward_fast(io.stream(), io.upload(dy), io.upload(argmax_math), s, dx_fast);
      expect_same_bits(io.download(y_fast, out.size()), y_math, "max_pool_forward_fast" + what);
      expect_same_bits(io.download(argmax_fast, out.size()), argmax_math,
                       "max_pool_forward_fast argmax" + what);
      expect_same_bits(io.download(dx_fast, s.size()), dx_math, "max_pool_backward_fast" + what);
    }
  }
}

}  // namespace
}  // namespace towers
