// SPDX-License-Identifier: MIT
// im2col / col2im (kernels/math/conv.hpp): a convolution as im2col + GEMM equals a direct
// SAME convolution with HWIO weights, and its backward matches finite differences.
#include <gtest/gtest.h>

#include <vector>

#include "check.hpp"
#include "kernels/host/blas.hpp"
#include "kernels/host/kernels.hpp"
#include "kernels/math/conv.hpp"

namespace towers {
namespace {

using math::Nhwc;
using testing::expect_close;

// Direct 5x5-style SAME convolution in double: x [N, H, W, Cin], w [k, k, Cin, Cout]
// (HWIO), y [N, H, W, Cout]. Written without im2col, as the oracle.
std::vector<double> conv_reference(const std::vector<double>& x, const std::vector<double>& w,
                                   Nhwc s, int k, int out_channels) {
  std::vector<double> y(static_cast<size_t>(s.pixels()) * out_channels, 0.0);
  for (int n = 0; n < s.batch; ++n)
    for (int oy = 0; oy < s.height; ++oy)
      for (int ox = 0; ox < s.width; ++ox)
        for (int co = 0; co < out_channels; ++co) {
          double sum = 0;
          for (int kh = 0; kh < k; ++kh)
            for (int kw = 0; kw < k; ++kw)
              for (int ci = 0; ci < s.channels; ++ci) {
                const int iy = oy + kh - k / 2, ix = ox + kw - k / 2;
                if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
                sum += x[s.offset(n, iy, ix, ci)] *
                       w[((kh * k + kw) * s.channels + ci) * out_channels + co];
              }
          y[((n * s.height + oy) * s.width + ox) * out_channels + co] = sum;
        }
  return y;
}

TEST(Im2col, PatchOfACornerPixelIsZeroPadded) {
  const Nhwc s{1, 2, 2, 1};
  const std::vector<float> x = {1, 2, 3, 4};  // x: [1, 2, 2, 1]
  std::vector<float> col(4 * 9);              // col: [4 pixels, 3 * 3 * 1]
  host::im2col(x.data(), s, 3, col.data());
  // Pixel (0, 0) sees the image in the lower-right 2x2 of its 3x3 patch.
  const std::vector<float> row0(col.begin(), col.begin() + 9);
  EXPECT_EQ(row0, (std::vector<float>{0, 0, 0, 0, 1, 2, 0, 3, 4}));
  // Pixel (1, 1) sees it in the upper-left 2x2.
  const std::vector<float> row3(col.begin() + 27, col.end());
  EXPECT_EQ(row3, (std::vector<float>{1, 2, 0, 3, 4, 0, 0, 0, 0}));
}

TEST(Im2col, ColumnsAreOrderedKernelRowKernelColumnChannel) {
  const Nhwc s{1, 1, 1, 2};
  const std::vector<float> x = {7, 8};  // one pixel, two channels
  std::vector<float> col(3 * 3 * 2);
  host::im2col(x.data(), s, 3, col.data());
  // Only the centre (kh = 1, kw = 1) is inside the image: columns (1 * 3 + 1) * 2 + c.
  std::vector<float> expected(18, 0.0f);
  expected[8] = 7;
  expected[9] = 8;
  EXPECT_EQ(col, expected);
}

struct ConvCase {
  Nhwc s{2, 6, 5, 3};
  int k = 5;
  int out = 4;
  int columns() const { return math::im2col_columns(k, s.channels); }
};

// y[pixels, out] = im2col(x) x w: the model's convolution, in float.
std::vector<float> conv_by_gemm(const ConvCase& c, const std::vector<float>& x,
                                const std::vector<float>& w, std::vector<float>& col) {
  col.assign(static_cast<size_t>(c.s.pixels()) * c.columns(), 0.0f);
  host::im2col(x.data(), c.s, c.k, col.data());
  std::vector<float> y(static_cast<size_t>(c.s.pixels()) * c.out);
  host::gemm(false, false, c.s.pixels(), c.out, c.columns(), 1.0f, col.data(), c.columns(),
             w.data(), c.out, 0.0f, y.data(), c.out);
  return y;
}

TEST(Conv, Im2colTimesHwioWeightsIsTheDirectConvolution) {
  const ConvCase c;
  const auto x = testing::random_floats(c.s.size(), 1);
  const auto w = testing::random_floats(c.columns() * c.out, 2);
  std::vector<float> col;
  const auto y = conv_by_gemm(c, x, w, col);
  const auto expected =
      conv_reference(testing::to_double(x), testing::to_double(w), c.s, c.k, c.out);
  expect_close("conv forward", y, expected, 1e-5, 1e-5);
}

TEST(Conv, BackwardMatchesFiniteDifferences) {
  const ConvCase c;
  const auto x = testing::random_floats(c.s.size(), 3);
  const auto w = testing::random_floats(c.columns() * c.out, 4);
  const auto r = testing::random_floats(c.s.pixels() * c.out, 5);  // dy
  std::vector<float> col;
  conv_by_gemm(c, x, w, col);

  // dw[columns, out] = col^T x dy; dcol[pixels, columns] = dy x w^T; dx = col2im(dcol).
  std::vector<float> dw(w.size()), dcol(col.size()), dx(x.size());
  host::gemm(true, false, c.columns(), c.out, c.s.pixels(), 1.0f, col.data(), c.columns(),
             r.data(), c.out, 0.0f, dw.data(), c.out);
  host::gemm(false, true, c.s.pixels(), c.columns(), c.out, 1.0f, r.data(), c.out, w.data(),
             c.out, 0.0f, dcol.data(), c.columns());
  host::col2im(dcol.data(), c.s, c.k, dx.data());

  const auto xd = testing::to_double(x), wd = testing::to_double(w), rd = testing::to_double(r);
  const auto dx_numeric = testing::numerical_gradient(
      [&](const std::vector<double>& v) {
        return testing::weighted_sum(rd, conv_reference(v, wd, c.s, c.k, c.out));
      },
      xd);
  const auto dw_numeric = testing::numerical_gradient(
      [&](const std::vector<double>& v) {
        return testing::weighted_sum(rd, conv_reference(xd, v, c.s, c.k, c.out));
      },
      wd);
  expect_close("conv dx (col2im) vs finite differences", dx, dx_numeric, 1e-4, 1e-3);
  expect_close("conv dw vs finite differences", dw, dw_numeric, 1e-4, 1e-3);
}

}  // namespace
}  // namespace towers
