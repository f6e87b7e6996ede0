// SPDX-License-Identifier: MIT
// Host loops that move channel runs instead of single elements; the cuda halves are the
// kernels of ops.cpp's twins. See ops_fast_host.hpp for why the results are identical.
#include "model/ops_fast_host.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cuda/blas.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/host/blas.hpp"
#include "kernels/host/parallel.hpp"
#include "kernels/host/phase_clock.hpp"
#include "kernels/math/conv.hpp"
#include "kernels/math/pool.hpp"

namespace towers::ops {
namespace {

using Ctx = CudaLaunchContext;

// col[pixels, k*k*C]: row (n, oy, ox) holds, tap by tap (kh, kw), the C channels of input
// pixel (oy + kh - k/2, ox + kw - k/2), or C zeros where that pixel is padding. The taps
// of one kernel row kh are k neighbouring pixels of one input row, contiguous in NHWC as
// they are in col: one copy per kernel row for the taps inside the image, zeros around
// it. (One copy per tap costs a library call per 3 floats in conv1.)
void host_im2col(const float* x, Nhwc s, int k, float* col, int n_begin, int n_end) {
  const int c = s.channels;
  const std::size_t run = static_cast<std::size_t>(c) * sizeof(float);  // one tap
  float* out = col + static_cast<std::size_t>(n_begin) * s.height * s.width *
                         math::im2col_columns(k, c);
  for (int n = n_begin; n < n_end; ++n) {
    for (int oy = 0; oy < s.height; ++oy) {
      for (int ox = 0; ox < s.width; ++ox) {
        // Taps kw in [first, last) read real pixels: 0 <= ox + kw - k/2 < width.
        const int first = std::max(0, k / 2 - ox);
        const int last = std::min(k, s.width - ox + k / 2);
        for (int kh = 0; kh < k; ++kh, out += k * c) {
          const int iy = oy + kh - k / 2;
          if (iy < 0 || iy >= s.height || first >= last) {
            std::memset(out, 0, k * run);  // all-zero bits are 0.0f
            continue;
          }
          std::memset(out, 0, first * run);
          std::memcpy(out + first * c, x + s.offset(n, iy, ox + first - k / 2, 0),
                      (last - first) * run);
          std::memset(out + last * c, 0, (k - last) * run);
        }
      }
    }
  }
}

// dx pixel (n, iy, ix) = sum over taps (kh, kw) increasing of the dcol run that im2col
// copied from it: row (n, iy - kh + k/2, ix - kw + k/2), tap (kh, kw).
void host_col2im(const float* dcol, Nhwc s, int k, float* dx, int n_begin, int n_end) {
  const int c = s.channels;
  const int columns = math::im2col_columns(k, c);
  for (int n = n_begin; n < n_end; ++n) {
    for (int iy = 0; iy < s.height; ++iy) {
      for (int ix = 0; ix < s.width; ++ix) {
        float* sum = dx + s.offset(n, iy, ix, 0);
        std::fill(sum, sum + c, 0.0f);
        for (int kh = 0; kh < k; ++kh) {
          const int oy = iy - kh + k / 2;
          if (oy < 0 || oy >= s.height) continue;
          for (int kw = 0; kw < k; ++kw) {
            const int ox = ix - kw + k / 2;
            if (ox < 0 || ox >= s.width) continue;
            const std::size_t row = (static_cast<std::size_t>(n) * s.height + oy) * s.width + ox;
            const float* from = dcol + row * columns + (kh * k + kw) * c;
            for (int j = 0; j < c; ++j) sum[j] += from[j];
          }
        }
      }
    }
  }
}

// Output pixel (n, oy, ox) takes, channel by channel, the first largest real cell of its
// window (rows y0.., columns x0.., row-major), with the input's flat index as argmax.
// The running maximum lives in buffers of its own, which the compiler can see alias
// neither x nor each other, so the compare-and-select runs vectorize without checks.
void host_max_pool_forward(const float* x, Nhwc in, float* y, int* argmax, int n_begin,
                           int n_end) {
  const Nhwc out = math::max_pool_output_shape(in);
  const int c = in.channels;
  std::vector<float> best(static_cast<std::size_t>(c));
  std::vector<int> where(static_cast<std::size_t>(c));
  for (int n = n_begin; n < n_end; ++n) {
    for (int oy = 0; oy < out.height; ++oy) {
      for (int ox = 0; ox < out.width; ++ox) {
        const int y0 = oy * math::kPoolStride - math::pool_pad_before(in.height);
        const int x0 = ox * math::kPoolStride - math::pool_pad_before(in.width);
        bool first = true;
        for (int iy = std::max(y0, 0); iy < std::min(y0 + math::kPoolWindow, in.height); ++iy) {
          for (int ix = std::max(x0, 0); ix < std::min(x0 + math::kPoolWindow, in.width); ++ix) {
            const int base = in.offset(n, iy, ix, 0);
            const float* cell = x + base;
            if (first) {
              for (int j = 0; j < c; ++j) best[j] = cell[j], where[j] = base + j;
              first = false;
              continue;
            }
            // Selects instead of branches, so the compiler can vectorize the run; the
            // index is selected with a mask (all ones where larger), a form GCC 12 turns
            // into vector code where `larger ? base + j : where[j]` stays a branch.
            for (int j = 0; j < c; ++j) {
              const bool larger = cell[j] > best[j];
              const int mask = -static_cast<int>(larger);
              best[j] = larger ? cell[j] : best[j];
              where[j] = (mask & (base + j)) | (~mask & where[j]);
            }
          }
        }
        std::copy(best.begin(), best.end(), y + out.offset(n, oy, ox, 0));
        std::copy(where.begin(), where.end(), argmax + out.offset(n, oy, ox, 0));
      }
    }
  }
}

// Outputs of image n only have argmax inside image n, so images split without overlap.
// One image at a time: its dx is zeroed and then scattered into while it is still in
// cache (pool1's is 147 KB); zeroing every image of the part first left the first ones
// evicted by the time their scatter came. Each input still sums its outputs in
// increasing o, the same adds in the same order.
void host_max_pool_backward(const float* dy, const int* argmax, Nhwc in, float* dx, int n_begin,
                            int n_end) {
  const std::size_t per_image_in = static_cast<std::size_t>(in.height) * in.width * in.channels;
  const Nhwc out = math::max_pool_output_shape(in);
  const std::size_t per_image_out =
      static_cast<std::size_t>(out.height) * out.width * out.channels;
  for (std::size_t n = n_begin; n < static_cast<std::size_t>(n_end); ++n) {
    std::fill(dx + n * per_image_in, dx + (n + 1) * per_image_in, 0.0f);
    for (std::size_t o = n * per_image_out; o < (n + 1) * per_image_out; ++o) {
      dx[argmax[o]] += dy[o];
    }
  }
}

// Runs loop(n_begin, n_end) over the images of a batch, split over the op threads: the
// loops above write only their own images' outputs, so the parts never overlap.
template <typename Loop>
void over_images(int batch, Loop loop) {
  host::parallel_for(batch, 1, [&](std::int64_t begin, std::int64_t end) {
    loop(static_cast<int>(begin), static_cast<int>(end));
  });
}

// Bytes of im2col matrix per tile of the fused convolution ops: half the L2 of the
// development machine's cores (1 MiB each), so a tile and its product's other operands
// stay in cache. A tile is at least one image (conv2's is 0.9 MB).
constexpr std::size_t kConvTileBytes = std::size_t{512} << 10;

// Images per tile for im2col rows of `columns` floats over `pixels` pixels per image.
int tile_images(const Nhwc& s, int columns) {
  const std::size_t per_image = static_cast<std::size_t>(s.height) * s.width * columns * sizeof(float);
  return static_cast<int>(std::max<std::size_t>(1, kConvTileBytes / per_image));
}

// Runs tile(n_begin, n_end) for the tiles of `per_tile` images at fixed positions (0,
// per_tile, 2 per_tile, ...), the tiles split over the op threads. Inside a part, the
// host BLAS and loops run on the calling thread (parallel.hpp: parts never split again).
template <typename Tile>
void over_tiles(int batch, int per_tile, Tile tile) {
  const int tiles = (batch + per_tile - 1) / per_tile;
  host::parallel_for(tiles, 1, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const int n0 = static_cast<int>(t) * per_tile;
      tile(n0, std::min(batch, n0 + per_tile));
    }
  });
}

// The fused ops' trace names, also their phase records' (kernels/host/phase_clock.hpp).
constexpr const char* kConvForwardName = "im2col_gemm_bias_relu";
constexpr const char* kConvInputGradName = "gemm_col2im";

}  // namespace

void conv_forward_fast(Stream& stream, const float* x, Nhwc s, int k, const float* w,
                       const float* bias, int out_channels, float* col, float* y) {
  const int columns = math::im2col_columns(k, s.channels);
  const int per_image = s.height * s.width;  // output pixels (SAME) = rows of col
  stream.launch(
      kConvForwardName,
      [=] {
        host::PhaseRecord record(kConvForwardName);  // phase times, for profiles
        over_tiles(s.batch, tile_images(s, columns), [&](int n0, int n1) {
          const std::size_t row0 = static_cast<std::size_t>(n0) * per_image;
          const int rows = (n1 - n0) * per_image;
          float* col_tile = col + row0 * columns;
          float* y_tile = y + row0 * out_channels;
          host::PhaseTimer phases(record);  // each pass of the tile, for profiles
          host_im2col(x, s, k, col, n0, n1);
          phases.lap(host::Phase::kIm2col);
          host::gemm(false, false, rows, out_channels, columns, 1.0f, col_tile, columns, w,
                     out_channels, 0.0f, y_tile, out_channels);
          phases.lap(host::Phase::kProduct);
          // bias_add and relu_forward in one pass: host::bias_add's sum, then
          // math::relu_forward's select, element by element.
          for (int r = 0; r < rows; ++r) {
            float* y_row = y_tile + static_cast<std::size_t>(r) * out_channels;
            for (int j = 0; j < out_channels; ++j) {
              const float sum = y_row[j] + bias[j];
              y_row[j] = sum > 0.0f ? sum : 0.0f;
            }
          }
          phases.lap(host::Phase::kBiasRelu);
        });
      },
      [=](const Ctx& c) {
        const int pixels = static_cast<int>(s.pixels());
        cuda::im2col(c, x, s, k, col);
        cuda::gemm(c, false, false, pixels, out_channels, columns, 1.0f, col, columns, w,
                   out_channels, 0.0f, y, out_channels);
        cuda::bias_add(c, pixels, out_channels, bias, y);
        cuda::relu_forward(c, static_cast<math::Index>(pixels) * out_channels, y, y);
      });
}

void conv_input_grad_fast(Stream& stream, const float* dy, int out_channels, const float* w,
                          Nhwc s, int k, float* dcol, float* dx) {
  const int columns = math::im2col_columns(k, s.channels);
  const int per_image = s.height * s.width;
  stream.launch(
      kConvInputGradName,
      [=] {
        host::PhaseRecord record(kConvInputGradName);
        over_tiles(s.batch, tile_images(s, columns), [&](int n0, int n1) {
          const std::size_t row0 = static_cast<std::size_t>(n0) * per_image;
          const int rows = (n1 - n0) * per_image;
          // dcol rows of this tile = dy rows w^T, then summed into this tile's images.
          host::PhaseTimer phases(record);
          host::gemm(false, true, rows, columns, out_channels, 1.0f, dy + row0 * out_channels,
                     out_channels, w, out_channels, 0.0f, dcol + row0 * columns, columns);
          phases.lap(host::Phase::kProduct);
          host_col2im(dcol, s, k, dx, n0, n1);
          phases.lap(host::Phase::kCol2im);
        });
      },
      [=](const Ctx& c) {
        cuda::gemm(c, false, true, static_cast<int>(s.pixels()), columns, out_channels, 1.0f, dy, out_channels, w,
                   out_channels, 0.0f, dcol, columns);
        cuda::col2im(c, dcol, s, k, dx);
      });
}

void im2col_fast(Stream& stream, const float* x, Nhwc s, int k, float* col) {
  stream.launch(
      "im2col",
      [=] { over_images(s.batch, [&](int n0, int n1) { host_im2col(x, s, k, col, n0, n1); }); },
      [=](const Ctx& c) { cuda::im2col(c, x, s, k, col); });
}

void col2im_fast(Stream& stream, const float* dcol, Nhwc s, int k, float* dx) {
  stream.launch(
      "col2im",
      [=] {
        over_images(s.batch, [&](int n0, int n1) { host_col2im(dcol, s, k, dx, n0, n1); });
      },
      [=](const Ctx& c) { cuda::col2im(c, dcol, s, k, dx); });
}

void max_pool_forward_fast(Stream& stream, const float* x, Nhwc in, float* y, int* argmax) {
  stream.launch(
      "max_pool",
      [=] {
        over_images(in.batch,
                    [&](int n0, int n1) { host_max_pool_forward(x, in, y, argmax, n0, n1); });
      },
      [=](const Ctx& c) { cuda::max_pool_forward(c, x, in, y, argmax); });
}

void max_pool_backward_fast(Stream& stream, const float* dy, const int* argmax, Nhwc in,
                            float* dx) {
  stream.launch(
      "max_pool_grad",
      [=] {
        over_images(in.batch,
                    [&](int n0, int n1) { host_max_pool_backward(dy, argmax, in, dx, n0, n1); });
      },
      [=](const Ctx& c) { cuda::max_pool_backward(c, dy, argmax, in, dx); });
}

}  // namespace towers::ops
