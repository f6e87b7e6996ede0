// SPDX-License-Identifier: MIT
// End to end against the original model: the golden batch (tests/golden, computed in
// float64 with TF semantics) through Network::forward_backward on each backend. Every
// activation, the three losses and every gradient must agree, and the largest difference
// of each tensor is printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../runtime/backends.hpp"
#include "device_io.hpp"
#include "golden.hpp"
#include "model/network.hpp"
#include "model/parameters.hpp"

namespace towers::model {
namespace {

using testing::DeviceIo;
using testing::Golden;

constexpr int kGoldenBatch = 4;

// Expects |a - e| <= rel * (|e| + floor * max|e|) per element: relative, with an absolute
// floor scaled to the tensor, because float32 sums of many terms lose relative precision
// where they cancel to nearly zero. Prints the largest difference relative to max|e|.
void expect_close(const std::string& what, const std::vector<float>& actual,
                  const std::vector<float>& expected, double rel, double floor) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double scale = 0;
  for (float e : expected) scale = std::max(scale, std::fabs(double{e}));
  double max_diff = 0;
  int wrong = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i], diff = std::fabs(a - e);
    if (!(diff <= max_diff)) max_diff = diff;  // NaN counts as worst
    if (!(diff <= rel * (std::fabs(e) + floor * scale))) {
      if (++wrong <= 3) ADD_FAILURE() << what << "[" << i << "]: " << a << " vs golden " << e;
    }
  }
  std::printf("  %-30s n=%-7zu max|e|=%-10.4g max|diff|=%-10.3g (%.2g of max|e|) #wrong=%d\n",
              what.c_str(), actual.size(), scale, max_diff, scale > 0 ? max_diff / scale : 0.0,
              wrong);
  EXPECT_EQ(wrong, 0) << what;
}

class GoldenBatch : public model::testing::EachBackend {};

TEST_P(GoldenBatch, ForwardBackwardMatchesTheTensorFlowModel) {
  const Golden golden;
  DeviceIo io(GetParam());

  // The golden parameters in TF layout are exactly the flat buffer's variables.
  std::vector<float> params(kNumParameters);
  for (const ParameterView& view : parameter_layout()) {
    const std::vector<float> values = golden.tensor<float>("params/" + view.name);
    ASSERT_EQ(values.size(), view.count) << view.name;
    std::copy(values.begin(), values.end(), params.begin() + view.offset);
  }
  const float* d_params = io.upload(params);
  const float* d_images = io.upload(golden.tensor<float>("input/images"));  // [4, 24, 24, 3]
  const int* d_labels = io.upload(golden.tensor<std::int32_t>("input/labels"));
  float* d_grads = io.upload(std::vector<float>(kNumParameters, 0.0f));

  Network net(io.device(), kGoldenBatch);
  net.forward_backward(io.stream(), d_params, d_images, d_labels, d_grads);

  std::printf("activations (%s):\n", std::string(to_string(GetParam())).c_str());
  for (const std::string& name : Network::activation_names()) {
    const std::vector<float> expected = golden.tensor<float>("activations/" + name);
    expect_close(name, io.download(net.activation(name), expected.size()), expected, 1e-5, 1e-1);
  }

  const std::vector<float> losses = io.download(net.losses(), kLossCount);
  const char* scalar_names[kLossCount] = {"cross_entropy_mean", "weight_decay_loss", "total_loss"};
  for (int i = 0; i < kLossCount; ++i) {
    const double expected = golden.scalar(scalar_names[i]);
    std::printf("  %-30s %.7f vs golden %.7f (rel diff %.2g)\n", scalar_names[i], losses[i],
                expected, std::fabs(losses[i] - expected) / expected);
    EXPECT_NEAR(losses[i], expected, 1e-5 * expected) << scalar_names[i];
  }

  std::printf("gradients:\n");
  const std::vector<float> grads = io.download(d_grads, kNumParameters);
  for (const ParameterView& view : parameter_layout()) {
    const std::vector<float> actual(grads.begin() + view.offset,
                                    grads.begin() + view.offset + view.count);
    expect_close(view.name, actual, golden.tensor<float>("grads/" + view.name), 1e-4, 1e-1);
  }
}

TOWERS_INSTANTIATE_BOTH_BACKENDS(GoldenBatch);

}  // namespace
}  // namespace towers::model
