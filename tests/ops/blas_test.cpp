// SPDX-License-Identifier: MIT
// Host BLAS (kernels/host/blas.hpp): row-major GEMM for every transpose combination and
// padded row strides against a naive triple loop; gemv, dot, axpy, scal by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check.hpp"
#include "kernels/host/blas.hpp"

namespace towers {
namespace {

// Element (i, j) of op(x), x row-major with row stride ld.
double at(const std::vector<float>& x, bool trans, int i, int j, int ld) {
  return trans ? x[j * ld + i] : x[i * ld + j];
}

class Gemm : public ::testing::TestWithParam<std::pair<bool, bool>> {};

TEST_P(Gemm, RowMajorMatchesATripleLoop) {
  const auto [trans_a, trans_b] = GetParam();
  const int m = 5, n = 7, k = 3;
  // Stored shapes, each row padded by 2 so that a wrong ld shows.
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
  host::gemm(trans_a, trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  testing::expect_close(std::string("gemm trans_a=") + (trans_a ? "T" : "N") +
                            " trans_b=" + (trans_b ? "T" : "N"),
                        c, expected, 1e-5, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, Gemm,
                         ::testing::Values(std::pair{false, false}, std::pair{false, true},
                                           std::pair{true, false}, std::pair{true, true}));

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
