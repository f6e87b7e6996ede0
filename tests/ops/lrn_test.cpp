// SPDX-License-Identifier: MIT
// Local response normalization (kernels/math/lrn.hpp): windows clipped at the channel
// edges, alpha on the plain sum, the normalizing power, and the backward pass against
// finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "check.hpp"
#include "kernels/host/kernels.hpp"
#include "kernels/math/lrn.hpp"

namespace towers {
namespace {

using math::LrnParams;

TEST(Lrn, DefaultsAreTheCifar10Model) {
  const LrnParams p;
  EXPECT_EQ(p.depth_radius, 4);
  EXPECT_EQ(p.bias, 1.0f);
  EXPECT_FLOAT_EQ(p.alpha, 0.001f / 9.0f);
  EXPECT_EQ(p.beta, 0.75f);
}

// Distance in units in the last place between two positive floats.
std::int64_t ulps_apart(float a, float b) {
  std::int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  return std::abs(static_cast<std::int64_t>(ia) - ib);
}

TEST(Lrn, FactorForTheModelsBetaIsWithinFourUlpOfTheExactPower) {
  // Every 97th float of [1, 16): the scales the model sees are 1 + alpha * (sum of
  // squares), just above 1.
  std::int64_t worst = 0;
  for (float s = 1.0f; s < 16.0f; s += 97 * (std::nextafter(s, 32.0f) - s)) {
    const float exact = static_cast<float>(std::pow(static_cast<double>(s), -0.75));
    worst = std::max(worst, ulps_apart(math::lrn_factor(s, 0.75f), exact));
  }
  std::printf("  lrn_factor(s, 0.75) vs pow in double: worst %lld ulp\n",
              static_cast<long long>(worst));
  EXPECT_LE(worst, 4);
  EXPECT_EQ(math::lrn_factor(16.0f, 0.75f), 0.125f);  // 16^-0.75 = 1/8 exactly
}

TEST(Lrn, FactorForOtherBetasIsPowf) {
  for (const float beta : {0.5f, 1.0f, 0.7f}) {
    EXPECT_EQ(math::lrn_factor(2.5f, beta), powf(2.5f, -beta)) << "beta " << beta;
  }
}

TEST(Lrn, WindowIsClippedAtTheChannelEdges) {
  const LrnParams p{1, 2.0f, 0.5f, 1.0f};  // radius 1: channels c-1..c+1
  const std::vector<float> x = {1, 2, 3, 4};  // one pixel, four channels
  std::vector<float> y(4), scale(4);
  host::lrn_forward(1, 4, p, x.data(), y.data(), scale.data());
  // c0 sums x0, x1 only; c3 sums x2, x3 only; alpha multiplies the plain sum.
  EXPECT_EQ(scale, (std::vector<float>{2 + 0.5f * 5, 2 + 0.5f * 14, 2 + 0.5f * 29, 2 + 0.5f * 25}));
  EXPECT_FLOAT_EQ(y[0], 1 / 4.5f);
  EXPECT_FLOAT_EQ(y[1], 2 / 9.0f);
  EXPECT_FLOAT_EQ(y[3], 4 / 14.5f);
}

TEST(Lrn, RadiusWiderThanTheChannelsCoversThemAll) {
  const LrnParams p{4, 1.0f, 1.0f, 0.5f};
  const std::vector<float> x = {1, 2, 3};
  std::vector<float> y(3), scale(3);
  host::lrn_forward(1, 3, p, x.data(), y.data(), scale.data());
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(scale[c], 15.0f);
    EXPECT_FLOAT_EQ(y[c], x[c] / std::sqrt(15.0f));
  }
}

std::vector<double> lrn_reference(const std::vector<double>& x, int channels, LrnParams p) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = static_cast<int>(i % channels);
    double sum = 0;
    for (int j = std::max(0, c - p.depth_radius); j <= std::min(channels - 1, c + p.depth_radius);
         ++j)
      sum += x[i - c + j] * x[i - c + j];
    y[i] = x[i] * std::pow(p.bias + double{p.alpha} * sum, -double{p.beta});
  }
  return y;
}

void check_lrn_gradient(const char* what, LrnParams p, unsigned seed) {
  const int pixels = 3, channels = 12;
  const auto x = testing::random_floats(pixels * channels, seed, -2.0f, 2.0f);
  const auto r = testing::random_floats(pixels * channels, seed + 1);
  std::vector<float> y(x.size()), scale(x.size()), dx(x.size());
  host::lrn_forward(pixels, channels, p, x.data(), y.data(), scale.data());
  host::lrn_backward(pixels, channels, p, x.data(), y.data(), scale.data(), r.data(), dx.data());

  const auto xd = testing::to_double(x), rd = testing::to_double(r);
  testing::expect_close(std::string(what) + " forward", y, lrn_reference(xd, channels, p), 1e-6,
                        1e-5);
  const auto numeric = testing::numerical_gradient(
      [&](const std::vector<double>& v) {
        return testing::weighted_sum(rd, lrn_reference(v, channels, p));
      },
      xd);
  testing::expect_close(std::string(what) + " dx vs finite differences", dx, numeric, 1e-5,
                        1e-3);
}

TEST(Lrn, BackwardMatchesFiniteDifferencesWithModelParameters) {
  check_lrn_gradient("lrn (model)", LrnParams{}, 21);
}

TEST(Lrn, BackwardMatchesFiniteDifferencesWithAStrongCrossTerm) {
  // alpha large enough that the cross-channel term dominates a wrong backward.
  check_lrn_gradient("lrn (alpha 0.5)", LrnParams{2, 1.0f, 0.5f, 0.75f}, 23);
}

}  // namespace
}  // namespace towers
