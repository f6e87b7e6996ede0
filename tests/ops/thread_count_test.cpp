// SPDX-License-Identifier: MIT
// Host ops split over several threads (kernels/host/parallel.hpp) give what one thread
// gives: the loops bit for bit, the products within rounding of a triple loop. Sizes are
// chosen so that every op really splits into three parts (the minimum part of each is in
// its .cpp file; the comments below do the arithmetic).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "check.hpp"
#include "kernels/host/blas.hpp"
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

// Element (i, j) of op(x), x row-major with row stride ld.
double at(const std::vector<float>& x, bool trans, int i, int j, int ld) {
  return trans ? x[j * ld + i] : x[i * ld + j];
}

class SplitGemm : public ::testing::TestWithParam<std::pair<bool, bool>> {};

TEST_P(SplitGemm, EachPartMultipliesItsOwnRows) {
  const auto [trans_a, trans_b] = GetParam();
  // 3000 rows of 40 x 30 multiply-adds: parts of >= 2^20 / 1200 = 873 rows, so three
  // parts with three threads. Rows padded by 2, so a part that got ld wrong shows.
  const int m = 3000, n = 40, k = 30;
  const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k, lda = a_cols + 2;
  const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n, ldb = b_cols + 2;
  const int ldc = n + 2;
  const auto a = random_floats(a_rows * lda, 61);
  const auto b = random_floats(b_rows * ldb, 62);
  auto c = random_floats(m * ldc, 63);
  const float alpha = 0.5f, beta = -2.0f;
  std::vector<double> expected(c.begin(), c.end());
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += at(a, trans_a, i, p, lda) * at(b, trans_b, p, j, ldb);
      expected[i * ldc + j] = alpha * sum + beta * c[i * ldc + j];
    }
  OpThreads setting(3);
  host::gemm(trans_a, trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  testing::expect_close(std::string("3-thread gemm trans_a=") + (trans_a ? "T" : "N") +
                            " trans_b=" + (trans_b ? "T" : "N"),
                        c, expected, 1e-5, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, SplitGemm,
                         ::testing::Values(std::pair{false, false}, std::pair{false, true},
                                           std::pair{true, false}, std::pair{true, true}));

TEST(ThreadCount, SplitGemvMatchesASum) {
  // 700 outputs of 4096 multiply-adds: parts of >= 256 outputs, so two parts.
  const int big = 4096, small = 700, lda = small + 3;
  const auto a = random_floats(big * lda, 71);  // a[big, small], padded rows
  const auto x_big = random_floats(big, 72), x_small = random_floats(small, 73);
  std::vector<double> expected_t(small, 0.0), expected_n(big, 0.0);
  for (int i = 0; i < big; ++i)
    for (int j = 0; j < small; ++j) {
      expected_t[j] += static_cast<double>(a[i * lda + j]) * x_big[i];  // a^T x
      expected_n[i] += static_cast<double>(a[i * lda + j]) * x_small[j];  // a x
    }
  OpThreads setting(3);
  std::vector<float> y_t(small), y_n(big);
  host::gemv(true, big, small, 1.0f, a.data(), lda, x_big.data(), 0.0f, y_t.data());
  host::gemv(false, big, small, 1.0f, a.data(), lda, x_small.data(), 0.0f, y_n.data());
  testing::expect_close("3-thread gemv (transposed)", y_t, expected_t, 1e-4, 1e-4);
  testing::expect_close("3-thread gemv", y_n, expected_n, 1e-4, 1e-4);
}

}  // namespace
}  // namespace towers
