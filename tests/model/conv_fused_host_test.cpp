// SPDX-License-Identifier: MIT
// The fused convolution ops of ops_fast_host.hpp against the plain op sequences they
// replace (im2col, gemm, bias_add, relu; gemm, col2im), on the model's two layer shapes
// with batches that end in a partial tile, on each backend; on the host with 1 and 3 op
// threads. The data-movement parts must match bit for bit (col); the products may differ
// only where the BLAS picks another kernel for a tile's fewer rows, so the values are
// compared to a few float32 roundings of their scale, and printed when they differ at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "../ops/op_threads.hpp"
#include "../runtime/backends.hpp"
#include "device_io.hpp"
#include "kernels/math/conv.hpp"
#include "model/ops.hpp"
#include "model/ops_fast_host.hpp"

namespace towers::ops {
namespace {

using model::testing::DeviceIo;
using model::testing::EachBackend;
using model::testing::random_values;

// Largest |a - e| over max |e|; every element must be within `rel` of that scale.
void expect_close(const char* what, const std::vector<float>& actual,
                  const std::vector<float>& expected, double rel) {
  ASSERT_EQ(actual.size(), expected.size());
  double scale = 0, diff = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    scale = std::max(scale, std::fabs(double{expected[i]}));
    const double d = std::fabs(double{actual[i]} - expected[i]);
    if (!(d <= diff)) diff = d;  // NaN counts as worst
  }
  if (diff != 0) std::printf("  %s: max|diff| %.3g of max|e| %.3g\n", what, diff, scale);
  EXPECT_LE(diff, rel * scale) << what;
}

struct Layer {
  Nhwc shape;
  int out_channels;
};

// The sizes of one layer's convolution as im2col and a product.
struct ConvSizes {
  int columns;       // im2col columns: kK * kK * input channels
  int pixels;        // output pixels of the batch: the product's rows
  std::size_t cols;  // floats of the im2col matrix
  std::size_t ys;    // floats of the output
  std::size_t ws;    // floats of the weights
};

class FusedConv : public EachBackend {
 protected:
  // conv1 (3 images per tile: a batch of 5 ends in a tile of 2) and conv2 (1 per tile).
  const std::vector<Layer> layers_ = {{{5, 24, 24, 3}, 64}, {{3, 12, 12, 64}, 64}};
  static constexpr int kK = 5;

  // Calls check(io, layer, sizes, threads) for each layer, with 1 and then 3 op threads,
  // each on a fresh DeviceIo of the test's backend.
  template <typename Check>
  void each_case(Check check) {
    for (int threads : {1, 3}) {
      testing::OpThreads op_threads(threads);
      DeviceIo io(GetParam());
      for (const Layer& l : layers_) {
        const int columns = math::im2col_columns(kK, l.shape.channels);
        const int pixels = static_cast<int>(l.shape.pixels());
        const ConvSizes sizes{columns, pixels, static_cast<std::size_t>(pixels) * columns,
                              static_cast<std::size_t>(pixels) * l.out_channels,
                              static_cast<std::size_t>(columns) * l.out_channels};
        check(io, l, sizes, threads);
      }
    }
  }
};

TEST_P(FusedConv, ForwardEqualsIm2colGemmBiasRelu) {
  each_case([](DeviceIo& io, const Layer& l, const ConvSizes& n, int threads) {
    const float* x = io.upload(random_values(l.shape.size(), 1));
    const float* w = io.upload(random_values(n.ws, 2));
    const float* b = io.upload(random_values(l.out_channels, 3));
    float* col = io.upload(std::vector<float>(n.cols, -7.0f));
    float* y = io.upload(std::vector<float>(n.ys, -7.0f));
    im2col(io.stream(), x, l.shape, kK, col);
    gemm(io.stream(), false, false, n.pixels, l.out_channels, n.columns, 1.0f, col, n.columns, w,
         l.out_channels, 0.0f, y, l.out_channels);
    bias_add(io.stream(), n.pixels, l.out_channels, b, y);
    relu_forward(io.stream(), static_cast<math::Index>(n.ys), y, y);

    float* col_fast = io.upload(std::vector<float>(n.cols, 7.0f));
    float* y_fast = io.upload(std::vector<float>(n.ys, 7.0f));
    conv_forward_fast(io.stream(), x, l.shape, kK, w, b, l.out_channels, col_fast, y_fast);
    EXPECT_EQ(io.download(col, n.cols), io.download(col_fast, n.cols)) << "col, " << threads;
    expect_close("y", io.download(y_fast, n.ys), io.download(y, n.ys), 1e-6);
  });
}

TEST_P(FusedConv, InputGradEqualsGemmCol2im) {
  each_case([](DeviceIo& io, const Layer& l, const ConvSizes& n, int) {
    const float* dy = io.upload(random_values(n.ys, 4));
    const float* w = io.upload(random_values(n.ws, 5));
    float* dcol = io.upload(std::vector<float>(n.cols, -7.0f));
    float* dx = io.upload(std::vector<float>(l.shape.size(), -7.0f));
    gemm(io.stream(), false, true, n.pixels, n.columns, l.out_channels, 1.0f, dy, l.out_channels, w,
         l.out_channels, 0.0f, dcol, n.columns);
    col2im(io.stream(), dcol, l.shape, kK, dx);

    float* dcol_fast = io.upload(std::vector<float>(n.cols, 7.0f));
    float* dx_fast = io.upload(std::vector<float>(l.shape.size(), 7.0f));
    conv_input_grad_fast(io.stream(), dy, l.out_channels, w, l.shape, kK, dcol_fast, dx_fast);
    expect_close("dcol", io.download(dcol_fast, n.cols), io.download(dcol, n.cols), 1e-6);
    expect_close("dx", io.download(dx_fast, l.shape.size()), io.download(dx, l.shape.size()),
                 1e-6);
  });
}

TOWERS_INSTANTIATE_BOTH_BACKENDS(FusedConv);

}  // namespace
}  // namespace towers::ops
