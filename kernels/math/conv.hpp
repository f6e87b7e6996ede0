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

/// Where element `i` of col[pixels, k*k*C] comes from, for input shape `s` (NHWC) and
/// SAME padding: the flat index in x of the value that output pixel row(i) multiplies
/// with weight row column(i), or -1 where the patch hangs over the image edge.
TOWERS_HD inline Index im2col_source(Index i, Nhwc s, int k) {
  const int columns = im2col_columns(k, s.channels);
  // One 64-bit division splits i; the rest is 32-bit and uses products, not remainders.
  const Index row = i / columns;  // output pixel (n, oy, ox)
  const int column = static_cast<int>(i - row * columns);
  const int image_pixels = s.height * s.width;
  const int n = static_cast<int>(row / image_pixels);
  const int pixel = static_cast<int>(row - static_cast<Index>(n) * image_pixels);
  const int oy = pixel / s.width;
  const int ox = pixel - oy * s.width;
  const int kh = column / (k * s.channels);
  const int kw_c = column - kh * k * s.channels;  // (kw, c) within kernel row kh
  const int kw = kw_c / s.channels;
  const int c = kw_c - kw * s.channels;
  const int iy = oy + kh - k / 2;
  const int ix = ox + kw - k / 2;
  if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) return -1;
  return s.offset(n, iy, ix, c);
}

/// Element `i` of col[pixels, k*k*C] for input x with shape `s` (NHWC), SAME padding:
/// the input value that output pixel row(i) multiplies with weight row column(i), or 0
/// where the patch hangs over the image edge.
TOWERS_HD inline float im2col(Index i, const float* x, Nhwc s, int k) {
  const Index source = im2col_source(i, s, k);
  return source < 0 ? 0.0f : x[source];
}

/// Flat index in dcol[pixels, k*k*C] of the entry that im2col copied from input pixel
/// (n, iy, ix), channel c, through kernel cell (kh, kw), or -1 if no output pixel read it.
TOWERS_HD inline Index col2im_source(int n, int iy, int ix, int c, int kh, int kw, Nhwc s, int k) {
  const int oy = iy - kh + k / 2;  // the output row whose patch has x at kernel row kh
  const int ox = ix - kw + k / 2;
  if (oy < 0 || oy >= s.height || ox < 0 || ox >= s.width) return -1;
  const Index row = (static_cast<Index>(n) * s.height + oy) * s.width + ox;
  return row * im2col_columns(k, s.channels) + (kh * k + kw) * s.channels + c;
}

/// Element `i` of dx (shape `s`, NHWC): the sum of every dcol[pixels, k*k*C] entry that
/// im2col copied from x[i]. Visits kernel rows kh, then columns kw, in increasing order.
TOWERS_HD inline float col2im(Index i, const float* dcol, Nhwc s, int k) {
  const Index pixel_index = i / s.channels;  // (n, iy, ix)
  const int c = static_cast<int>(i - pixel_index * s.channels);
  const int image_pixels = s.height * s.width;
  const int n = static_cast<int>(pixel_index / image_pixels);
  const int pixel = static_cast<int>(pixel_index - static_cast<Index>(n) * image_pixels);
  const int iy = pixel / s.width;
  const int ix = pixel - iy * s.width;
  float sum = 0.0f;
  for (int kh = 0; kh < k; ++kh) {
    for (int kw = 0; kw < k; ++kw) {
      const Index j = col2im_source(n, iy, ix, c, kh, kw, s, k);
      if (j >= 0) sum += dcol[j];
    }
  }
  return sum;
}

}  // namespace towers::math
