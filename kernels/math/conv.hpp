// SPDX-License-Identifier: MIT
// Convolution as a matrix product: im2col and its adjoint col2im.
//
// A stride-1 SAME convolution with a k x k kernel (k odd; the model uses k = 5) pads
// k / 2 zeros on every side, so the output has the input's height and width. im2col
// copies, for every output pixel, the k x k x C input patch it reads into one row of
// `col`:
//
//   col: [pixels, k * k * C]    row = output pixel (n, y, x); column = (kh, kw, c_in)
//
// The column order (kh, kw, c_in) is the row order of TensorFlow's HWIO weights
// [kh, kw, in, out] seen as a matrix [k * k * in, out], so the convolution is one GEMM:
//
//   y[pixels, out] = col[pixels, k*k*in] x w[k*k*in, out]
//
// col2im is the backward of im2col: it maps d(col) back to d(x). It is written as a
// *gather*: each input element sums the col entries that read it, in a fixed order, so
// it needs no atomics and gives the same bits on every run.
#pragma once

#include "kernels/common.hpp"
#include "kernels/math/shape.hpp"

namespace towers::math {

/// Columns of the im2col matrix for a k x k kernel over `channels` input channels.
TOWERS_HD inline int im2col_columns(int k, int channels) { return k * k * channels; }

/// Element `i` of col[pixels, k*k*C] for input x with shape `s` (NHWC), SAME padding:
/// the input value that output pixel row(i) multiplies with weight row column(i), or 0
/// where the patch hangs over the image edge.
TOWERS_HD inline float im2col(int i, const float* x, Nhwc s, int k) {
  const int columns = im2col_columns(k, s.channels);
  const int row = i / columns;  // output pixel (n, oy, ox)
  const int column = i % columns;
  const int kh = column / (k * s.channels);
  const int kw = (column / s.channels) % k;
  const int c = column % s.channels;
  const int n = row / (s.height * s.width);
  const int oy = (row / s.width) % s.height;
  const int ox = row % s.width;
  const int iy = oy + kh - k / 2;
  const int ix = ox + kw - k / 2;
  if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) return 0.0f;
  return x[s.offset(n, iy, ix, c)];
}

/// Element `i` of dx (shape `s`, NHWC): the sum of every dcol[pixels, k*k*C] entry that
/// im2col copied from x[i]. Visits kernel rows kh, then columns kw, in increasing order.
TOWERS_HD inline float col2im(int i, const float* dcol, Nhwc s, int k) {
  const int columns = im2col_columns(k, s.channels);
  const int c = i % s.channels;
  const int ix = (i / s.channels) % s.width;
  const int iy = (i / (s.channels * s.width)) % s.height;
  const int n = i / (s.channels * s.width * s.height);
  float sum = 0.0f;
  for (int kh = 0; kh < k; ++kh) {
    const int oy = iy - kh + k / 2;  // the output row whose patch has x at kernel row kh
    if (oy < 0 || oy >= s.height) continue;
    for (int kw = 0; kw < k; ++kw) {
      const int ox = ix - kw + k / 2;
      if (ox < 0 || ox >= s.width) continue;
      const int row = (n * s.height + oy) * s.width + ox;
      sum += dcol[row * columns + (kh * k + kw) * s.channels + c];
    }
  }
  return sum;
}

}  // namespace towers::math
