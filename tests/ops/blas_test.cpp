// SPDX-License-Identifier: MIT
// Host BLAS (kernels/host/blas.hpp): row-major GEMM for every transpose combination and
// padded row strides against a naive triple loop, whole and split over op threads;
// gemv split and by hand; dot, axpy, scal by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check.hpp"
#include "kernels/host/blas.hpp"
#include "op_threads.hpp"

namespace towers {
namespace {

// Element (i, j) of op(x), x row-major with row stride ld.
double at(const std::vector<float>& x, bool trans, int i, int j, int ld) {
  return trans ? x[j * ld + i] : x[i * ld + j];
}

// Checks host::gemm on an m x n x k product with `threads` op threads against a triple
// loop in double, with every row padded by 2 so that a wrong ld (or a part of a split
// product that used one wrongly) shows.
void expect_gemm_matches_a_triple_loop(bool trans_a, bool trans_b, int m, int n, int k,
                                       int threads) {
  const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k, lda = a_cols + 2;
  const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n, ldb = b_cols + 2;
  const int ldc = n + 2;
  const auto a = testing::random_floats(a_rows * lda, 51);
  const auto b = testing::random_floats(b_rows * ldb, 52);
  auto c = testing::random_floats(m * ldc, 53);
  const float alpha = 0.5f, beta = -2.0f;

  std::vector<double> expected(c.begin(), c.end());  // padding stays as it was
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += at(a, trans_a, i, p, lda) * at(b, trans_b, p, j, ldb);
      expected[i * ldc + j] = alpha * sum + beta * c[i * ldc + j];
    }
  testing::OpThreads setting(threads);
  host::gemm(trans_a, trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  testing::expect_close(std::to_string(threads) + "-thread gemm " + std::to_string(m) + "x" +
                            std::to_string(n) + "x" + std::to_string(k) + " trans_a=" +
                            (trans_a ? "T" : "N") + " trans_b=" + (trans_b ? "T" : "N"),
                        c, expected, 1e-5, 1e-5);
}

class Gemm : public ::testing::TestWithParam<std::pair<bool, bool>> {};

TEST_P(Gemm, RowMajorMatchesATripleLoop) {
  const auto [trans_a, trans_b] = GetParam();
  expect_gemm_matches_a_triple_loop(trans_a, trans_b, 5, 7, 3, 1);
}

TEST_P(Gemm, SplitOverThreadsEachPartMultipliesItsOwnRows) {
  // 3000 rows of 40 x 30 multiply-adds: parts of at least 2^20 / 1200 = 873 rows
  // (blas.cpp), so three parts with three threads.
  const auto [trans_a, trans_b] = GetParam();
  expect_gemm_matches_a_triple_loop(trans_a, trans_b, 3000, 40, 30, 3);
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, Gemm,
                         ::testing::Values(std::pair{false, false}, std::pair{false, true},
                                           std::pair{true, false}, std::pair{true, true}));

TEST(Gemv, SplitOverThreadsMatchesASum) {
  // 700 outputs of 4096 multiply-adds (a^T x), or 4096 outputs of 700 (a x): two parts
  // with three threads either way (parts of at least 2^20 multiply-adds).
  const int big = 4096, small = 700, lda = small + 3;
  const auto a = testing::random_floats(big * lda, 71);  // a[big, small], padded rows
  const auto x_big = testing::random_floats(big, 72), x_small = testing::random_floats(small, 73);
  std::vector<double> expected_t(small, 0.0), expected_n(big, 0.0);
  for (int i = 0; i < big; ++i)
    for (int j = 0; j < small; ++j) {
      expected_t[j] += static_cast<double>(a[i * lda + j]) * x_big[i];
      expected_n[i] += static_cast<double>(a[i * lda + j]) * x_small[j];
    }
  testing::OpThreads setting(3);
  std::vector<float> y_t(small), y_n(big);
  host::gemv(true, big, small, 1.0f, a.data(), lda, x_big.data(), 0.0f, y_t.data());
  host::gemv(false, big, small, 1.0f, a.data(), lda, x_small.data(), 0.0f, y_n.data());
  testing::expect_close("3-thread gemv (transposed)", y_t, expected_t, 1e-4, 1e-4);
  testing::expect_close("3-thread gemv", y_n, expected_n, 1e-4, 1e-4);
}

TEST(Gemv, TransposedProductWithOnesIsTheColumnSums) {
  const std::vector<float> dy = {1, 2, 3, 4, 5, 6};  // dy: [2 rows, 3 channels]
  const std::vector<float> ones = {1, 1};
  std::vector<float> db(3, 0.0f);
  host::gemv(true, 2, 3, 1.0f, dy.data(), 3, ones.data(), 0.0f, db.data());
  EXPECT_EQ(db, (std::vector<float>{5, 7, 9}));  // the bias gradient
  std::vector<float> y = {1, 1};
  const std::vector<float> x = {1, 0, -1};
  host::gemv(false, 2, 3, 2.0f, dy.data(), 3, x.data(), 1.0f, y.data());
  EXPECT_EQ(y, (std::vector<float>{1 + 2 * (1 - 3), 1 + 2 * (4 - 6)}));
}

TEST(Blas1, DotAxpyScal) {
  const std::vector<float> x = {1, 2, 3};
  std::vector<float> y = {4, 5, 6};
  float result = 0;
  host::dot(3, x.data(), x.data(), &result);
  EXPECT_EQ(result, 14.0f);  // sum of squares: 2 * l2_loss
  host::axpy(3, 2.0f, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{6, 9, 12}));
  host::scal(3, 0.5f, y.data());
  EXPECT_EQ(y, (std::vector<float>{3, 4.5f, 6}));
}

}  // namespace
}  // namespace towers
