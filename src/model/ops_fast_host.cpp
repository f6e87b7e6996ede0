// SPDX-License-Identifier: MIT
// Host loops that move channel runs instead of single elements; the cuda halves are the
// kernels of ops.cpp's twins. See ops_fast_host.hpp for why the results are identical.
#include "model/ops_fast_host.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cuda/blas.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/host/implicit_conv.hpp"
#include "kernels/host/parallel.hpp"
#include "kernels/host/phase_clock.hpp"
#include "kernels/math/conv.hpp"
#include "kernels/math/pool.hpp"

namespace towers::ops {
namespace {

using Ctx = CudaLaunchContext;

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

// The host's zero-padded copies live in the op's workspace (col) where they fit; the
// padded output gradient may not for a layer with far more outputs than inputs on tiny
// images (not the model's: conv2's takes a seventh of col2), and then gets memory of its
// own.
float* workspace(float* col, math::Index col_floats, math::Index needed,
                 std::vector<float>& own) {
  if (needed <= col_floats) return col;
  own.resize(static_cast<std::size_t>(needed));
  return own.data();
}

// Floats of a zero-padded copy of a batch of shape s, `channels` per pixel.
math::Index padded_floats(const Nhwc& s, int k, int channels) {
  return static_cast<math::Index>(s.batch) * (s.height + k - 1) * (s.width + k - 1) * channels;
}

// The fused ops' trace names, also their phase records' (kernels/host/phase_clock.hpp).
constexpr const char* kConvForwardName = "im2col_gemm_bias_relu";
constexpr const char* kConvInputGradName = "gemm_col2im";

}  // namespace

void conv_forward_fast(Stream& stream, const float* x, Nhwc s, int k, const float* w,
                       const float* bias, int out_channels, float* col, float* y) {
  const int columns = math::im2col_columns(k, s.channels);
  stream.launch(
      kConvForwardName,
      [=] {
        host::PhaseRecord record(kConvForwardName);  // phase times, for profiles
        // Each part pads its own images into col (the weight gradient reads them there
        // later), then computes their outputs from them: the product with bias and ReLU.
        over_images(s.batch, [&](int n0, int n1) {
          host::PhaseTimer phases(record);
          host::conv_pad(x, s, k / 2, col, n0, n1);
          phases.lap(host::Phase::kIm2col);
          host::conv_forward_implicit(col, s, k, w, out_channels, bias, y, n0, n1);
          phases.lap(host::Phase::kProduct);
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

void conv_weight_grad_fast(Stream& stream, Nhwc s, int k, const float* dy, int out_channels,
                           const float* col, float* dw) {
  const int columns = math::im2col_columns(k, s.channels);
  stream.launch(
      "gemm",
      [=] {
        // Rows of dw split over the op threads; every row sums all images in order.
        host::parallel_for(columns, 1, [&](std::int64_t r0, std::int64_t r1) {
          host::conv_weight_grad_implicit(col, s, k, dy, out_channels, dw,
                                          static_cast<int>(r0), static_cast<int>(r1));
        });
      },
      [=](const Ctx& c) {
        cuda::gemm(c, true, false, columns, out_channels, static_cast<int>(s.pixels()), 1.0f, col,
                   columns, dy, out_channels, 0.0f, dw, out_channels);
      });
}

void conv_input_grad_fast(Stream& stream, const float* dy, int out_channels, const float* w,
                          Nhwc s, int k, float* dcol, float* dx) {
  const int columns = math::im2col_columns(k, s.channels);
  stream.launch(
      kConvInputGradName,
      [=] {
        host::PhaseRecord record(kConvInputGradName);
        // dx is the forward convolution of dy, zero-padded, with the weights turned by
        // 180 degrees and their in and out swapped (implicit_conv.hpp).
        host::PhaseTimer flip(record);
        std::vector<float> w_flip(static_cast<std::size_t>(columns) * out_channels);
        host::conv_flip_weights(w, k, s.channels, out_channels, w_flip.data());
        flip.lap(host::Phase::kIm2col);
        const Nhwc dy_shape{s.batch, s.height, s.width, out_channels};
        std::vector<float> own;
        float* dy_pad = workspace(dcol, s.pixels() * columns,
                                  padded_floats(s, k, out_channels), own);
        over_images(s.batch, [&](int n0, int n1) {
          host::PhaseTimer phases(record);
          host::conv_pad(dy, dy_shape, k / 2, dy_pad, n0, n1);
          phases.lap(host::Phase::kIm2col);
          host::conv_forward_implicit(dy_pad, dy_shape, k, w_flip.data(), s.channels, nullptr,
                                      dx, n0, n1);
          phases.lap(host::Phase::kProduct);
        });
      },
      [=](const Ctx& c) {
        cuda::gemm(c, false, true, static_cast<int>(s.pixels()), columns, out_channels, 1.0f, dy, out_channels, w,
                   out_channels, 0.0f, dcol, columns);
        cuda::col2im(c, dcol, s, k, dx);
      });
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
