// SPDX-License-Identifier: MIT
// kernels/host/implicit_conv.hpp against the readable route it replaces, im2col and a
// product. Its forward pass and weight gradient promise one chain of fused multiply-adds
// per element, in im2col's column (or row) order: the test builds the im2col matrix with
// host::im2col and runs that chain itself with std::fma, so they must match bit for bit,
// with every instruction set this CPU runs and with the weight gradient's rows split. The
// input gradient sums in another order than col2im(dy w^T), so it is compared with
// host::gemm and host::col2im within a bound, and across instruction sets bit for bit.
// Shapes: the model's, widths that leave a partial panel of output rows (6 per panel),
// kernels from 1 to 7 and larger than the image (all-padding taps), channel counts the
// vector loops take (multiples of 16 or 8) and ones only the portable loop takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/host/blas.hpp"
#include "kernels/host/implicit_conv.hpp"
#include "kernels/host/kernels.hpp"
#include "kernels/math/conv.hpp"

namespace towers::host {
namespace {

using math::Index;
using math::Nhwc;

std::vector<float> random_values(Index n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      FAIL() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
    }
  }
}

// Every |got - want| within `rel` of the largest |want|.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0, diff = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(double{want[i]}));
    const double d = std::fabs(double{got[i]} - want[i]);
    if (!(d <= diff)) diff = d;  // NaN counts as worst
  }
  EXPECT_LE(diff, rel * scale) << what << ": max|diff| " << diff << " of max|want| " << scale;
}

struct Case {
  Nhwc shape;
  int k;
  int out;
};

const std::vector<Case> kCases = {
    {{2, 12, 12, 64}, 5, 64},  // the model's conv2
    {{1, 24, 24, 3}, 5, 64},   // the model's conv1 (one image)
    {{2, 5, 7, 13}, 3, 64},    // a panel of 6 rows and one of 1
    {{1, 7, 13, 3}, 7, 24},    // 24 columns: AVX2's vectors only
    {{2, 1, 2, 3}, 5, 16},     // the kernel larger than the image
    {{1, 4, 6, 5}, 1, 10},     // no padding; 10 columns: the portable loop only
    {{1, 3, 8, 16}, 3, 80},    // AVX-512: one block of 64 columns and one of 16
};

std::string name(const Case& c, ConvIsa isa) {
  return "H=" + std::to_string(c.shape.height) + " W=" + std::to_string(c.shape.width) +
         " C=" + std::to_string(c.shape.channels) + " k=" + std::to_string(c.k) +
         " out=" + std::to_string(c.out) + " isa=" + std::to_string(static_cast<int>(isa));
}

// The instruction sets this CPU runs; set_conv_isa picks one, and the fixture puts back
// the default when the test ends.
std::vector<ConvIsa> isas() {
  std::vector<ConvIsa> all = {ConvIsa::kPortable};
  if (best_conv_isa() != ConvIsa::kPortable) all.push_back(ConvIsa::kAvx2);
  if (best_conv_isa() == ConvIsa::kAvx512) all.push_back(ConvIsa::kAvx512);
  return all;
}
class ImplicitConv : public ::testing::Test {
 protected:
  ~ImplicitConv() override { set_conv_isa(best_conv_isa()); }
};

// "H12_W12_C64_k5_out64": a case's name in its tests' names.
std::string case_name(const Case& c) {
  return "H" + std::to_string(c.shape.height) + "_W" + std::to_string(c.shape.width) + "_C" +
         std::to_string(c.shape.channels) + "_k" + std::to_string(c.k) + "_out" +
         std::to_string(c.out);
}
void PrintTo(const Case& c, std::ostream* out) { *out << case_name(c); }

// A test for each of kCases: the case c, and its im2col matrix's columns and rows (the
// output pixels).
class ImplicitConvCase : public ImplicitConv, public ::testing::WithParamInterface<Case> {
 protected:
  const Case& c = GetParam();
  const int columns = math::im2col_columns(c.k, c.shape.channels);
  const Index pixels = c.shape.pixels();
};
INSTANTIATE_TEST_SUITE_P(Shapes, ImplicitConvCase, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return case_name(info.param); });

Index padded_size(const Nhwc& s, int k, int channels) {
  return Index{s.batch} * (s.height + k - 1) * (s.width + k - 1) * channels;
}

std::vector<float> padded(const std::vector<float>& x, const Nhwc& s, int k) {
  std::vector<float> x_pad(static_cast<std::size_t>(padded_size(s, k, s.channels)), 7.0f);
  conv_pad(x.data(), s, k / 2, x_pad.data(), 0, s.batch);
  return x_pad;
}

std::vector<float> im2col_of(const std::vector<float>& x, const Nhwc& s, int k) {
  std::vector<float> col(static_cast<std::size_t>(s.pixels() * math::im2col_columns(k, s.channels)));
  im2col(x.data(), s, k, col.data());
  return col;
}

TEST_F(ImplicitConv, PaddingPutsTheImageInsideABorderOfZeros) {
  const Nhwc s{2, 3, 4, 5};
  const int k = 5, pad = 2;
  const auto x = random_values(s.size(), 1);
  const auto x_pad = padded(x, s, k);
  const int hp = s.height + 2 * pad, wp = s.width + 2 * pad;
  for (int n = 0; n < s.batch; ++n) {
    for (int y = 0; y < hp; ++y) {
      for (int xx = 0; xx < wp; ++xx) {
        for (int c = 0; c < s.channels; ++c) {
          const bool inside = y >= pad && y < s.height + pad && xx >= pad && xx < s.width + pad;
          const float want = inside ? x[s.offset(n, y - pad, xx - pad, c)] : 0.0f;
          ASSERT_EQ(x_pad[((static_cast<std::size_t>(n) * hp + y) * wp + xx) * s.channels + c], want)
              << n << " " << y << " " << xx << " " << c;
        }
      }
    }
  }
}

TEST_P(ImplicitConvCase, ForwardIsOneFmaChainOverIm2colsColumns) {
  const auto x = random_values(c.shape.size(), 2);
  const auto w = random_values(Index{columns} * c.out, 3);
  const auto bias = random_values(c.out, 4);
  const auto col = im2col_of(x, c.shape, c.k);
  // The promised chain, and the same product by the BLAS as a check of the chain.
  std::vector<float> want(pixels * c.out), want_relu(pixels * c.out), blas(pixels * c.out);
  for (Index p = 0; p < pixels; ++p) {
    for (int o = 0; o < c.out; ++o) {
      float sum = 0.0f;
      for (int j = 0; j < columns; ++j) sum = std::fma(col[p * columns + j], w[Index{j} * c.out + o], sum);
      want[p * c.out + o] = sum;
      const float biased = sum + bias[o];
      want_relu[p * c.out + o] = biased > 0.0f ? biased : 0.0f;
    }
  }
  gemm(false, false, static_cast<int>(pixels), c.out, columns, 1.0f, col.data(), columns,
       w.data(), c.out, 0.0f, blas.data(), c.out);
  expect_close(want, blas, 1e-5, "chain vs gemm " + name(c, ConvIsa::kPortable));

  const auto x_pad = padded(x, c.shape, c.k);
  for (ConvIsa isa : isas()) {
    set_conv_isa(isa);
    ASSERT_EQ(conv_isa(), isa);
    std::vector<float> y(want.size(), 7.0f), y_relu(want.size(), 7.0f);
    // Images one at a time for y, all at once for y_relu: the split changes nothing.
    for (int n = 0; n < c.shape.batch; ++n) {
      conv_forward_implicit(x_pad.data(), c.shape, c.k, w.data(), c.out, nullptr, y.data(), n,
                            n + 1);
    }
    conv_forward_implicit(x_pad.data(), c.shape, c.k, w.data(), c.out, bias.data(),
                          y_relu.data(), 0, c.shape.batch);
    expect_same_bits(y, want, "forward " + name(c, isa));
    expect_same_bits(y_relu, want_relu, "forward with bias and ReLU " + name(c, isa));
  }
}

TEST_P(ImplicitConvCase, WeightGradientIsOneFmaChainOverIm2colsRows) {
  const auto x = random_values(c.shape.size(), 5);
  const auto dy = random_values(pixels * c.out, 6);
  const auto col = im2col_of(x, c.shape, c.k);
  std::vector<float> want(Index{columns} * c.out), blas(want.size());
  for (int r = 0; r < columns; ++r) {
    for (int o = 0; o < c.out; ++o) {
      float sum = 0.0f;
      for (Index p = 0; p < pixels; ++p) sum = std::fma(col[p * columns + r], dy[p * c.out + o], sum);
      want[Index{r} * c.out + o] = sum;
    }
  }
  gemm(true, false, columns, c.out, static_cast<int>(pixels), 1.0f, col.data(), columns,
       dy.data(), c.out, 0.0f, blas.data(), c.out);
  expect_close(want, blas, 1e-5, "chain vs gemm " + name(c, ConvIsa::kPortable));

  const auto x_pad = padded(x, c.shape, c.k);
  for (ConvIsa isa : isas()) {
    set_conv_isa(isa);
    std::vector<float> dw(want.size(), 7.0f), dw_split(want.size(), 7.0f);
    conv_weight_grad_implicit(x_pad.data(), c.shape, c.k, dy.data(), c.out, dw.data(), 0, columns);
    // Rows split as threads split them, at a row that is no panel's edge.
    const int cut = std::min(columns, 7);
    conv_weight_grad_implicit(x_pad.data(), c.shape, c.k, dy.data(), c.out, dw_split.data(), 0, cut);
    conv_weight_grad_implicit(x_pad.data(), c.shape, c.k, dy.data(), c.out, dw_split.data(), cut,
                              columns);
    expect_same_bits(dw, want, "weight gradient " + name(c, isa));
    expect_same_bits(dw_split, want, "weight gradient, rows split " + name(c, isa));
  }
}

TEST_P(ImplicitConvCase, InputGradientEqualsCol2imOfTheProduct) {
  const auto dy = random_values(pixels * c.out, 7);
  const auto w = random_values(Index{columns} * c.out, 8);
  // The readable route: dcol = dy w^T, then col2im sums it into dx.
  std::vector<float> dcol(pixels * columns), want(c.shape.size());
  gemm(false, true, static_cast<int>(pixels), columns, c.out, 1.0f, dy.data(), c.out, w.data(),
       c.out, 0.0f, dcol.data(), columns);
  col2im(dcol.data(), c.shape, c.k, want.data());

  // The implicit route: dy zero-padded, convolved with the flipped weights.
  const Nhwc dy_shape{c.shape.batch, c.shape.height, c.shape.width, c.out};
  std::vector<float> dy_pad(static_cast<std::size_t>(padded_size(c.shape, c.k, c.out)), 7.0f);
  conv_pad(dy.data(), dy_shape, c.k / 2, dy_pad.data(), 0, c.shape.batch);
  std::vector<float> w_flip(w.size(), 7.0f);
  conv_flip_weights(w.data(), c.k, c.shape.channels, c.out, w_flip.data());
  std::vector<float> first;
  for (ConvIsa isa : isas()) {
    set_conv_isa(isa);
    std::vector<float> dx(want.size(), 7.0f);
    conv_forward_implicit(dy_pad.data(), dy_shape, c.k, w_flip.data(), c.shape.channels, nullptr,
                          dx.data(), 0, c.shape.batch);
    expect_close(dx, want, 1e-5, "input gradient " + name(c, isa));
    if (first.empty()) first = dx;
    expect_same_bits(dx, first, "input gradient, against the portable loop " + name(c, isa));
  }
}

TEST_F(ImplicitConv, AnInstructionSetTheCpuLacksIsNotTaken) {
  set_conv_isa(ConvIsa::kPortable);
  EXPECT_EQ(conv_isa(), ConvIsa::kPortable);
  set_conv_isa(ConvIsa::kAvx512);
  EXPECT_EQ(conv_isa(), best_conv_isa() == ConvIsa::kAvx512 ? ConvIsa::kAvx512 : ConvIsa::kPortable);
}

}  // namespace
}  // namespace towers::host
