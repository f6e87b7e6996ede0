// SPDX-License-Identifier: MIT
// Nhwc: the shape of an image batch, as TensorFlow lays it out.
//
// Element (n, y, x, c) of a [batch, height, width, channels] tensor lives at
// ((n * height + y) * width + x) * channels + c: channels vary fastest, so one pixel's
// channels are contiguous. Indices are int: every tensor of the CIFAR-10 model, and every
// count cuBLAS takes, fits in 2^31 - 1 elements.
#pragma once

#include "kernels/common.hpp"

namespace towers::math {

/// The shape of an NHWC tensor: [batch, height, width, channels].
struct Nhwc {
  int batch = 0;     ///< images
  int height = 0;    ///< rows per image
  int width = 0;     ///< columns per image
  int channels = 0;  ///< values per pixel

  /// Number of pixels, batch * height * width: the rows of an NHWC tensor seen as a matrix.
  TOWERS_HD int pixels() const { return batch * height * width; }
  /// Number of elements, pixels() * channels.
  TOWERS_HD int size() const { return pixels() * channels; }
  /// Flat offset of element (n, y, x, c).
  TOWERS_HD int offset(int n, int y, int x, int c) const {
    return ((n * height + y) * width + x) * channels + c;
  }
};

}  // namespace towers::math
