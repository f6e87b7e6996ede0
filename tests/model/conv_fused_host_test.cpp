// SPDX-License-Identifier: MIT
// The convolution ops of ops_fast_host.hpp against the plain op sequences they replace
// (im2col, gemm, bias_add, relu; im2col and gemm for the weight gradient; gemm, col2im),
// on the model's two layer shapes with batches that split unevenly over threads, on each
// backend; on the host with 1 and 3 op threads. The host computes them without im2col
// (implicit GEMM), summing in another order than the BLAS, so the values are compared to
// within kRel of their scale, and printed when they differ at all; the cuda
// backend runs the plain kernels, and its col must hold im2col's matrix bit for bit. The
// host results must not depend on the thread count: the 3-thread run's bits equal the
// 1-thread run's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
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

// Results of the 1-thread run by name; the 3-thread run must give the same bits.
class SameBitsAcrossThreads {
 public:
  void check(const std::string& what, int threads, const std::vector<float>& got) {
    if (threads == 1) {
      first_[what] = got;
      return;
    }
    const std::vector<float>& want = first_.at(what);
    ASSERT_EQ(got.size(), want.size()) << what;
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << what << ": " << threads << " op threads change the bits";
  }

 private:
  std::map<std::string, std::vector<float>> first_;
};

// The bound: the sums run up to 2,880 terms (conv1's weight gradient at batch 5), each
// step rounding by half a float32 ulp of the running sum; one chain and the BLAS's blocks
// of it err apart by about sqrt(terms) such roundings, 15 to 50 float32 epsilons (1.2e-7)
// of the scale. Measured: at most 1.8e-6. A wrong tap or a lost term errs by a whole term,
// some 1e-3 of the scale: a hundred times the bound.
constexpr double kRel = 1e-5;

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

// The forward op's inputs on the device: images x, weights w and biases b, random from
// seeds `seed`, `seed` + 1 and `seed` + 2.
struct ForwardInputs {
  const float* x;
  const float* w;
  const float* b;
};

class FusedConv : public EachBackend {
 protected:
  // conv1 and conv2, with batches of 5 and 3 (split over 3 threads: 2, 2, 1 and 1, 1, 1).
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

  bool cuda() const { return GetParam() == Backend::kCuda; }

  static ForwardInputs forward_inputs(DeviceIo& io, const Layer& l, const ConvSizes& n,
                                      unsigned seed) {
    return {io.upload(random_values(l.shape.size(), seed)),
            io.upload(random_values(n.ws, seed + 1)),
            io.upload(random_values(l.out_channels, seed + 2))};
  }

  // The fast op's `count` floats at `fast` against the plain sequence's at `plain`, within
  // kRel; on the host also the same bits with 3 op threads as with 1.
  void expect_fast_as_plain(DeviceIo& io, const std::string& what, const Layer& l, int threads,
                            const float* fast, const float* plain, std::size_t count) {
    const auto got = io.download(fast, count);
    expect_close(what.c_str(), got, io.download(plain, count), kRel);
    if (!cuda()) same_.check(what + " C=" + std::to_string(l.shape.channels), threads, got);
  }

 private:
  SameBitsAcrossThreads same_;
};

TEST_P(FusedConv, ForwardEqualsIm2colGemmBiasRelu) {
  each_case([&](DeviceIo& io, const Layer& l, const ConvSizes& n, int threads) {
    const auto [x, w, b] = forward_inputs(io, l, n, 1);
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
    if (cuda()) {
      EXPECT_EQ(io.download(col, n.cols), io.download(col_fast, n.cols)) << "col, " << threads;
    }
    expect_fast_as_plain(io, "y", l, threads, y_fast, y, n.ys);
  });
}

TEST_P(FusedConv, WeightGradEqualsIm2colGemm) {
  each_case([&](DeviceIo& io, const Layer& l, const ConvSizes& n, int threads) {
    const auto [x, w, b] = forward_inputs(io, l, n, 6);
    const float* dy = io.upload(random_values(n.ys, 9));
    float* col = io.upload(std::vector<float>(n.cols, -7.0f));
    float* dw = io.upload(std::vector<float>(n.ws, -7.0f));
    im2col(io.stream(), x, l.shape, kK, col);
    gemm(io.stream(), true, false, n.columns, l.out_channels, n.pixels, 1.0f, col, n.columns, dy,
         l.out_channels, 0.0f, dw, l.out_channels);

    // The weight gradient reads what the forward op left in its workspace.
    float* col_fast = io.upload(std::vector<float>(n.cols, 7.0f));
    float* y_fast = io.upload(std::vector<float>(n.ys, 7.0f));
    float* dw_fast = io.upload(std::vector<float>(n.ws, 7.0f));
    conv_forward_fast(io.stream(), x, l.shape, kK, w, b, l.out_channels, col_fast, y_fast);
    conv_weight_grad_fast(io.stream(), l.shape, kK, dy, l.out_channels, col_fast, dw_fast);
    expect_fast_as_plain(io, "dw", l, threads, dw_fast, dw, n.ws);
  });
}

TEST_P(FusedConv, InputGradEqualsGemmCol2im) {
  each_case([&](DeviceIo& io, const Layer& l, const ConvSizes& n, int threads) {
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
    if (cuda()) {
      expect_close("dcol", io.download(dcol_fast, n.cols), io.download(dcol, n.cols), kRel);
    }
    expect_fast_as_plain(io, "dx", l, threads, dx_fast, dx, l.shape.size());
  });
}

TOWERS_INSTANTIATE_BOTH_BACKENDS(FusedConv);

}  // namespace
}  // namespace towers::ops
