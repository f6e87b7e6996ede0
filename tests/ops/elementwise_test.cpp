// SPDX-License-Identifier: MIT
// Elementwise ops (kernels/math/elementwise.hpp): hand-computed values, and the ReLU
// backward against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "check.hpp"
#include "kernels/host/kernels.hpp"

namespace towers {
namespace {

TEST(BiasAdd, BroadcastsOverRows) {
  std::vector<float> y = {1, 2, 3, 4, 5, 6};  // y: [2 rows, 3 channels]
  const std::vector<float> bias = {10, 20, 30};
  host::bias_add(2, 3, bias.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(Relu, ForwardAndBackwardByHand) {
  const std::vector<float> x = {-2, 0, 3};
  std::vector<float> y(3), dx(3);
  host::relu_forward(3, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{0, 0, 3}));
  const std::vector<float> dy = {5, 6, 7};
  host::relu_backward(3, y.data(), dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 7}));  // no gradient at x = 0, as in TF
}

TEST(Relu, BackwardMatchesFiniteDifferences) {
  // Values at least 0.005 away from the kink at 0, far more than the step.
  const auto x = testing::distinct_floats(64, 41);
  const auto r = testing::random_floats(64, 42);
  std::vector<float> y(64), dx(64);
  host::relu_forward(64, x.data(), y.data());
  host::relu_backward(64, y.data(), r.data(), dx.data());
  const auto rd = testing::to_double(r);
  const auto numeric = testing::numerical_gradient(
      [&](const std::vector<double>& v) {
        double s = 0;
        for (size_t i = 0; i < v.size(); ++i) s += rd[i] * (v[i] > 0 ? v[i] : 0);
        return s;
      },
      testing::to_double(x));
  testing::expect_close("relu dx vs finite differences", dx, numeric, 1e-6, 1e-4);
}

TEST(Fill, SetsEveryElement) {
  std::vector<float> x(5, 0.0f);
  host::fill(5, 1.5f, x.data());
  EXPECT_EQ(x, std::vector<float>(5, 1.5f));
}

TEST(SgdUpdate, StepsAgainstTheGradient) {
  std::vector<float> w = {1.0f, -2.0f};
  const std::vector<float> grad = {0.5f, -4.0f};
  host::sgd_update(2, 0.25f, grad.data(), w.data());
  EXPECT_EQ(w, (std::vector<float>{0.875f, -1.0f}));
}

TEST(EmaUpdate, MovesTheShadowTowardsTheVariable) {
  std::vector<float> shadow = {1.0f, 4.0f};
  const std::vector<float> var = {3.0f, 0.0f};
  host::ema_update(2, 0.75f, var.data(), shadow.data());
  // shadow - (1 - 0.75) * (shadow - var)
  EXPECT_EQ(shadow, (std::vector<float>{1.5f, 3.0f}));
}


TEST(MomentumUpdate, AccumulatesTheVelocityThenSteps) {
  std::vector<float> w = {1.0f, -2.0f};
  std::vector<float> velocity = {0.5f, 0.0f};
  const std::vector<float> grad = {0.25f, -4.0f};
  host::momentum_update(2, 0.5f, 0.5f, grad.data(), velocity.data(), w.data());
  // velocity = 0.5 * velocity + grad; w -= 0.5 * velocity (the new one)
  EXPECT_EQ(velocity, (std::vector<float>{0.5f, -4.0f}));
  EXPECT_EQ(w, (std::vector<float>{0.75f, 0.0f}));
}

TEST(AdamUpdate, FirstStepMovesEachWeightByTheStepSizeWhateverItsGradient) {
  // From m = v = 0, one step leaves m = (1 - beta1) g and v = (1 - beta2) g^2. With the
  // bias correction in the step size (1 / (1 - beta1), sqrt(1 - beta2)), m / sqrt(v) is
  // the sign of g: every weight moves by the step size, a gradient 1000 times larger
  // included. Exact values with beta1 = beta2 = 0.5 and epsilon = 0 (powers of two).
  math::AdamScalars s;
  s.beta1 = 0.5f;
  s.beta2 = 0.5f;
  s.epsilon = 0.0f;
  s.step_size = 0.25f;
  std::vector<float> w = {1.0f, 1.0f}, m = {0.0f, 0.0f}, v = {0.0f, 0.0f};
  const std::vector<float> grad = {2.0f, -2048.0f};
  host::adam_update(2, s, grad.data(), m.data(), v.data(), w.data());
  EXPECT_EQ(m, (std::vector<float>{1.0f, -1024.0f}));
  EXPECT_EQ(v, (std::vector<float>{2.0f, 2097152.0f}));
  // w - 0.25 * m / sqrt(v): 1 - 0.25 / sqrt(2) and 1 + 0.25 * 1024 / 1024 sqrt(2)
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.25f / std::sqrt(2.0f));
  EXPECT_FLOAT_EQ(w[1], 1.0f + 0.25f / std::sqrt(2.0f));
}

TEST(AdamUpdate, EpsilonKeepsAZeroGradientFinite) {
  math::AdamScalars s;  // the defaults: beta1 0.9, beta2 0.999, epsilon 1e-8
  s.step_size = 0.001f;
  std::vector<float> w = {3.0f}, m = {0.0f}, v = {0.0f};
  const std::vector<float> grad = {0.0f};
  host::adam_update(1, s, grad.data(), m.data(), v.data(), w.data());
  EXPECT_EQ(w[0], 3.0f);  // 0 / (0 + epsilon): no step, and no NaN
}

}  // namespace
}  // namespace towers
