// SPDX-License-Identifier: MIT
// Host loops for local response normalization (kernels/math/lrn.hpp), one pixel at a time.
//
// math::lrn_forward and math::lrn_backward compute one element each, as a CUDA thread
// does: the window sum of 2r + 1 terms, and in the backward pass a division per term, so
// every term is recomputed by the 2r + 1 elements whose windows hold it. On the CPU these
// loops compute each pixel's terms once (squares; dy * y / scale), into a row padded with
// r zeros on each side, then every channel's window sum as 2r + 1 adds, offsets in
// increasing order: vectorizable across channels, and bit for bit the sums of math::. The
// padding adds +0.0f before a window's first term and after its last, and x + 0.0f == x
// for every x that is not -0.0f; a sum that starts at +0.0f never becomes -0.0f. The
// remaining per-element expressions are math::'s, term for term.
// bench_host_ops checks the results against the per-element math:: loops, bit for bit.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/host/kernels.hpp"
#include "kernels/host/parallel.hpp"
#include "kernels/host/simd.hpp"
#include "kernels/math/lrn.hpp"

namespace towers::host {
namespace {

// window[c] = sum over d = 0..2r of padded[c + d], in increasing d: the window sum of
// channel c when padded[r + j] holds term j and the r entries on each side are zero.
void window_sums(const float* padded, int channels, int r, float* window) {
  for (int c = 0; c < channels; ++c) window[c] = 0.0f;
  for (int d = 0; d <= 2 * r; ++d) {
    for (int c = 0; c < channels; ++c) window[c] += padded[c + d];
  }
}

// Pixels [first, end) of lrn_forward; the parts of the split over the op threads
// (parallel.hpp) each have their own padded row and write only their own pixels. Each
// channel is a vector lane: compiled for the CPU's widest vectors (simd.hpp).
TOWERS_HOST_CLONES void forward_pixels(std::int64_t first, std::int64_t end, int channels, math::LrnParams p,
                    const float* x, float* y, float* scale) {
  const int r = p.depth_radius;
  std::vector<float> squares(static_cast<std::size_t>(channels + 2 * r), 0.0f);
  std::vector<float> sums(static_cast<std::size_t>(channels));
  for (std::int64_t pixel = first; pixel < end; ++pixel) {  // x, y, scale: [pixels, channels]
    const std::size_t base = static_cast<std::size_t>(pixel) * channels;
    const float* row = x + base;
    for (int c = 0; c < channels; ++c) squares[r + c] = row[c] * row[c];
    window_sums(squares.data(), channels, r, sums.data());
    for (int c = 0; c < channels; ++c) {
      const float s = p.bias + p.alpha * sums[c];
      scale[base + c] = s;
      y[base + c] = row[c] * math::lrn_factor(s, p.beta);
    }
  }
}

// Pixels [first, end) of lrn_backward, as forward_pixels.
TOWERS_HOST_CLONES void backward_pixels(std::int64_t first, std::int64_t end, int channels, math::LrnParams p,
                     const float* x, const float* y, const float* scale, const float* dy,
                     float* dx) {
  const int r = p.depth_radius;
  std::vector<float> ratios(static_cast<std::size_t>(channels + 2 * r), 0.0f);
  std::vector<float> cross(static_cast<std::size_t>(channels));
  for (std::int64_t pixel = first; pixel < end; ++pixel) {  // all: [pixels, channels]
    const std::size_t base = static_cast<std::size_t>(pixel) * channels;
    for (int c = 0; c < channels; ++c) {
      ratios[r + c] = dy[base + c] * y[base + c] / scale[base + c];
    }
    window_sums(ratios.data(), channels, r, cross.data());
    for (int c = 0; c < channels; ++c) {
      const std::size_t i = base + c;
      dx[i] = dy[i] * math::lrn_factor(scale[i], p.beta) -
              2.0f * p.alpha * p.beta * x[i] * cross[c];
    }
  }
}

// A part gets at least this many pixels (of 64 channels: ~100 microseconds of work).
constexpr std::int64_t kMinPixelsPerPart = 256;

}  // namespace

void lrn_forward(int pixels, int channels, math::LrnParams p, const float* x, float* y,
                 float* scale) {
  parallel_for(pixels, kMinPixelsPerPart, [=](std::int64_t first, std::int64_t end) {
    forward_pixels(first, end, channels, p, x, y, scale);
  });
}

void lrn_backward(int pixels, int channels, math::LrnParams p, const float* x, const float* y,
                  const float* scale, const float* dy, float* dx) {
  parallel_for(pixels, kMinPixelsPerPart, [=](std::int64_t first, std::int64_t end) {
    backward_pixels(first, end, channels, p, x, y, scale, dy, dx);
  });
}

}  // namespace towers::host
