// SPDX-License-Identifier: MIT
// Nhwc: the shape of an image batch, as TensorFlow lays it out.
//
// Element (n, y, x, c) of a [batch, height, width, channels] tensor lives at
// ((n * height + y) * width + x) * channels + c: channels vary fastest, so one pixel's
// channels are contiguous. Dimensions are int; element counts and flat indices are Index
// (64-bit): conv2's im2col matrix alone has 230,400 elements per image, so a batch of
// 9,321 passes 2^31 - 1.
#pragma once

#include <stdint.h>

#include "kernels/common.hpp"

namespace towers::math {

/// Element counts and flat indices of tensors: 64-bit, so no product of dimensions wraps.
using Index = int64_t;

/// The shape of an NHWC tensor: [batch, height, width, channels].
struct Nhwc {
  int batch = 0;     ///< images
  int height = 0;    ///< rows per image
  int width = 0;     ///< columns per image
  int channels = 0;  ///< values per pixel

  /// Number of pixels, batch * height * width: the rows of an NHWC tensor seen as a matrix.
  TOWERS_HD Index pixels() const { return static_cast<Index>(batch) * height * width; }
  /// Number of elements, pixels() * channels.
  TOWERS_HD Index size() const { return pixels() * channels; }
  /// Flat offset of element (n, y, x, c).
  TOWERS_HD Index offset(int n, int y, int x, int c) const {
    return ((static_cast<Index>(n) * height + y) * width + x) * channels + c;
  }
};

}  // namespace towers::math
