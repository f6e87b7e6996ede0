// SPDX-License-Identifier: MIT
// Max pooling, 3 x 3 window, stride 2, SAME padding (tf.nn.max_pool in cifar10.py).
//
// SAME gives out = ceil(in / 2) rows and columns. The padding the windows need,
// (out - 1) * 2 + 3 - in, is split as TensorFlow splits it: half (rounded down) before,
// the rest after. For the model's even sizes (24 -> 12, 12 -> 6) that is 0 before and 1
// after (bottom / right). Padded cells are skipped, never compared, so they never win,
// even when every real value is negative.
//
// The forward pass also records, per output, the flat input index of its maximum (the
// first one in row-major window order on ties). The backward pass is a *gather*: each
// input element sums the output gradients whose argmax it is. With stride 2 and a 3-wide
// window at most 2 x 2 outputs see one input, so the gather is short, and it needs no
// atomics.
#pragma once

#include "kernels/common.hpp"
#include "kernels/math/shape.hpp"

namespace towers::math {

/// Pooling window size and stride of the CIFAR-10 model.
inline constexpr int kPoolWindow = 3;
/// Stride of the pooling windows.
inline constexpr int kPoolStride = 2;

/// Output extent of a SAME pooling along one dimension of extent `in`: ceil(in / 2).
TOWERS_HD inline int pool_output_extent(int in) { return (in + kPoolStride - 1) / kPoolStride; }

/// Padding before the first window along a dimension of extent `in` (TF's SAME split).
TOWERS_HD inline int pool_pad_before(int in) {
  const int total = (pool_output_extent(in) - 1) * kPoolStride + kPoolWindow - in;
  return total > 0 ? total / 2 : 0;
}

/// Output shape of max pooling an input of shape `in`.
TOWERS_HD inline Nhwc max_pool_output_shape(Nhwc in) {
  return Nhwc{in.batch, pool_output_extent(in.height), pool_output_extent(in.width), in.channels};
}

/// One output of max pooling: the maximum and the flat input index where it was found.
struct PoolMax {
  float value;  ///< the largest real (unpadded) input in the window
  int index;    ///< flat NHWC index of that input in x
};

/// Output element `i` (NHWC over max_pool_output_shape(in)) of max pooling x (shape `in`).
TOWERS_HD inline PoolMax max_pool_forward(Index i, const float* x, Nhwc in) {
  const Nhwc out = max_pool_output_shape(in);
  const int c = static_cast<int>(i % out.channels);
  const int ox = static_cast<int>((i / out.channels) % out.width);
  const int oy = static_cast<int>((i / (out.channels * out.width)) % out.height);
  const int n = static_cast<int>(i / (static_cast<Index>(out.channels) * out.width * out.height));
  const int y0 = oy * kPoolStride - pool_pad_before(in.height);
  const int x0 = ox * kPoolStride - pool_pad_before(in.width);
  PoolMax best{0.0f, -1};
  for (int iy = y0; iy < y0 + kPoolWindow; ++iy) {
    if (iy < 0 || iy >= in.height) continue;  // padding: skipped, never a candidate
    for (int ix = x0; ix < x0 + kPoolWindow; ++ix) {
      if (ix < 0 || ix >= in.width) continue;
      const Index j = in.offset(n, iy, ix, c);
      // argmax buffers are int32: Network keeps pool inputs below 2^31 elements.
      if (best.index < 0 || x[j] > best.value) best = PoolMax{x[j], static_cast<int>(j)};
    }
  }
  return best;
}

/// Element `i` of dx (shape `in`): the sum of dy over the outputs whose argmax is i.
/// dy and argmax have shape max_pool_output_shape(in).
TOWERS_HD inline float max_pool_backward(Index i, const float* dy, const int* argmax, Nhwc in) {
  const Nhwc out = max_pool_output_shape(in);
  const int c = static_cast<int>(i % in.channels);
  const int ix = static_cast<int>((i / in.channels) % in.width);
  const int iy = static_cast<int>((i / (in.channels * in.width)) % in.height);
  const int n = static_cast<int>(i / (static_cast<Index>(in.channels) * in.width * in.height));
  // Output o's window starts at o * 2 - pad and covers 3 cells, so it contains iy when
  // (iy + pad - 2) / 2 <= o <= (iy + pad) / 2. Start from the upper end and step down
  // at most one window (stride 2 < window 3 < 2 * stride means at most two outputs).
  const int py = iy + pool_pad_before(in.height);
  const int px = ix + pool_pad_before(in.width);
  float sum = 0.0f;
  for (int oy = py / kPoolStride - 1; oy <= py / kPoolStride; ++oy) {
    if (oy < 0 || oy >= out.height || py - oy * kPoolStride >= kPoolWindow) continue;
    for (int ox = px / kPoolStride - 1; ox <= px / kPoolStride; ++ox) {
      if (ox < 0 || ox >= out.width || px - ox * kPoolStride >= kPoolWindow) continue;
      const Index o = out.offset(n, oy, ox, c);
      if (argmax[o] == i) sum += dy[o];
    }
  }
  return sum;
}

}  // namespace towers::math
