// SPDX-License-Identifier: MIT
// Host loops split over several threads (kernels/host/parallel.hpp) give the bits one
// thread gives. Sizes are chosen so that every op really splits into three parts (the
// minimum part of each is in its .cpp file; the comments below do the arithmetic). The
// split products are checked in blas_test.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "check.hpp"
#include "kernels/host/kernels.hpp"
#include "op_threads.hpp"

namespace towers {
namespace {

using testing::OpThreads;
using testing::random_floats;

// Runs `op` on fresh copies of `inputs`, once with one thread and once with three, and
// expects the same output bits.
void expect_same_bits(const std::string& what, int threads,
                      const std::function<std::vector<float>()>& op) {
  std::vector<float> one, many;
  {
    OpThreads setting(1);
    one = op();
  }
  {
    OpThreads setting(threads);
    many = op();
  }
  ASSERT_EQ(one.size(), many.size()) << what;
  EXPECT_TRUE(one == many) << what << ": results differ with " << threads << " threads";
}

TEST(ThreadCount, ElementwiseLoopsGiveTheSameBits) {
  constexpr int kN = 100000;  // > 3 parts of the minimum 32768 elements
  const auto x = random_floats(kN, 1), dy = random_floats(kN, 2), bias = random_floats(64, 3);
  expect_same_bits("relu_forward", 3, [&] {
    std::vector<float> y(kN);
    host::relu_forward(kN, x.data(), y.data());
    return y;
  });
  expect_same_bits("relu_backward", 3, [&] {
    std::vector<float> dx(kN);
    host::relu_backward(kN, x.data(), dy.data(), dx.data());
    return dx;
  });
  expect_same_bits("bias_add", 3, [&] {  // 1600 rows of 64: > 3 parts of 513 rows
    std::vector<float> y = x;
    host::bias_add(kN / 64, 64, bias.data(), y.data());
    return y;
  });
  expect_same_bits("sgd_update", 3, [&] {
    std::vector<float> w = x;
    host::sgd_update(kN, 0.1f, dy.data(), w.data());
    return w;
  });
  expect_same_bits("ema_update", 3, [&] {
    std::vector<float> shadow = x;
    host::ema_update(kN, 0.9999f, dy.data(), shadow.data());
    return shadow;
  });
  expect_same_bits("fill", 3, [&] {
    std::vector<float> v(kN, 1.0f);
    host::fill(kN, 2.5f, v.data());
    return v;
  });
}

TEST(ThreadCount, LrnGivesTheSameBits) {
  constexpr int kPixels = 1000, kChannels = 64;  // > 3 parts of the minimum 256 pixels
  const auto x = random_floats(kPixels * kChannels, 4, -3.0f, 3.0f);
  const auto dy = random_floats(kPixels * kChannels, 5);
  const math::LrnParams p;
  std::vector<float> y(x.size()), scale(x.size());
  host::lrn_forward(kPixels, kChannels, p, x.data(), y.data(), scale.data());
  expect_same_bits("lrn_forward", 3, [&] {
    std::vector<float> y2(x.size()), scale2(x.size());
    host::lrn_forward(kPixels, kChannels, p, x.data(), y2.data(), scale2.data());
    y2.insert(y2.end(), scale2.begin(), scale2.end());
    return y2;
  });
  expect_same_bits("lrn_backward", 3, [&] {
    std::vector<float> dx(x.size());
    host::lrn_backward(kPixels, kChannels, p, x.data(), y.data(), scale.data(), dy.data(),
                       dx.data());
    return dx;
  });
}

}  // namespace
}  // namespace towers
