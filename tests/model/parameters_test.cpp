// SPDX-License-Identifier: MIT
// The flat parameter buffer: ten variables, 1,068,298 values, back to back in TF's
// layouts, initialized as tf.truncated_normal_initializer and tf.constant_initializer.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/parameters.hpp"

namespace towers::model {
namespace {

TEST(Parameters, TheModelHas1068298Values) {
  std::size_t total = 0, next = 0;
  for (const ParameterView& view : parameter_layout()) {
    EXPECT_EQ(view.offset, next) << view.name << " is not right after the previous variable";
    next = view.offset + view.count;
    total += view.count;
  }
  EXPECT_EQ(total, 1068298u);
  EXPECT_EQ(kNumParameters, 1068298u);
  EXPECT_EQ(parameter_layout().size(), 10u);
}

TEST(Parameters, VariablesHaveTheTutorialsShapesAndDecay) {
  EXPECT_EQ(parameter("conv1/weights").shape, (std::vector<int>{5, 5, 3, 64}));
  EXPECT_EQ(parameter("conv2/weights").shape, (std::vector<int>{5, 5, 64, 64}));
  EXPECT_EQ(parameter("local3/weights").shape, (std::vector<int>{2304, 384}));
  EXPECT_EQ(parameter("local4/weights").shape, (std::vector<int>{384, 192}));
  EXPECT_EQ(parameter("softmax_linear/weights").shape, (std::vector<int>{192, 10}));
  EXPECT_EQ(parameter("softmax_linear/biases").shape, (std::vector<int>{10}));
  EXPECT_FLOAT_EQ(parameter("local3/weights").weight_decay, 0.004f);
  EXPECT_FLOAT_EQ(parameter("local4/weights").weight_decay, 0.004f);
  EXPECT_EQ(parameter("conv1/weights").weight_decay, 0.0f);
  EXPECT_EQ(parameter("local3/biases").weight_decay, 0.0f);
  EXPECT_THROW(parameter("conv3/weights"), std::out_of_range);
}

TEST(Parameters, InitialValuesAreTruncatedNormalWeightsAndConstantBiases) {
  std::vector<float> params(kNumParameters);
  initialize_parameters(42, params.data());
  for (const ParameterView& view : parameter_layout()) {
    const float* w = params.data() + view.offset;
    if (view.init_stddev == 0.0f) {
      for (std::size_t i = 0; i < view.count; ++i) ASSERT_EQ(w[i], view.init_value) << view.name;
      continue;
    }
    double sum = 0, squares = 0, largest = 0;
    for (std::size_t i = 0; i < view.count; ++i) {
      sum += w[i];
      squares += double{w[i]} * w[i];
      largest = std::max(largest, std::fabs(double{w[i]}));
    }
    const double n = static_cast<double>(view.count);
    const double mean = sum / n, stddev = std::sqrt(squares / n - mean * mean);
    // A normal truncated at 2 sigma has stddev 0.8796 sigma.
    const double expected = 0.8796 * view.init_stddev;
    std::printf("  %-24s mean %+.2e stddev %.5f (expected %.5f) max|w| %.5f (cut %.5f)\n",
                view.name.c_str(), mean, stddev, expected, largest, 2.0 * view.init_stddev);
    EXPECT_LE(largest, 2.0 * view.init_stddev * (1 + 1e-6)) << view.name;
    EXPECT_GT(largest, 1.9 * view.init_stddev) << view.name;  // the tails are there
    EXPECT_NEAR(stddev, expected, 5.0 * expected / std::sqrt(n) + 1e-3 * expected) << view.name;
    EXPECT_NEAR(mean, 0.0, 5.0 * view.init_stddev / std::sqrt(n)) << view.name;
  }
}

TEST(Parameters, InitializationIsDeterministicForASeed) {
  std::vector<float> a(kNumParameters), b(kNumParameters), c(kNumParameters);
  initialize_parameters(7, a.data());
  initialize_parameters(7, b.data());
  initialize_parameters(8, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace towers::model
