// SPDX-License-Identifier: MIT
// ops_fast_host.hpp: the fast pooling ops give exactly the bits of their ops.hpp twins,
// on the model's shapes and on odd ones (non-square, 3 channels), on each backend; and on
// the host with the batch split over three threads. The convolution ops are compared in
// conv_fused_host_test.cpp, within a bound.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../runtime/backends.hpp"
#include "device_io.hpp"
#include "kernels/math/pool.hpp"
#include "model/ops.hpp"
#include "model/ops_fast_host.hpp"
#include "../ops/op_threads.hpp"

namespace towers::ops {
namespace {

using model::testing::DeviceIo;
using model::testing::EachBackend;
using model::testing::random_values;

struct Case {
  Nhwc shape;
  int k;
};

class FastHostOps : public EachBackend {
 protected:
  const std::vector<Case> cases_ = {
      {{2, 24, 24, 3}, 5}, {{2, 12, 12, 64}, 5}, {{3, 7, 5, 3}, 3}, {{1, 4, 9, 2}, 5}};
};

TEST_P(FastHostOps, MaxPoolMatchesItsTwinBitForBit) {
  DeviceIo io(GetParam());
  for (const Case& c : cases_) {
    const Nhwc out = math::max_pool_output_shape(c.shape);
    // Ties included: values rounded to a coarse grid so windows hold equal maxima.
    std::vector<float> values = random_values(c.shape.size(), 3);
    for (float& v : values) v = static_cast<float>(static_cast<int>(v * 4)) / 4;
    const float* x = io.upload(values);
    float* y = io.upload(std::vector<float>(out.size()));
    int* argmax = io.upload(std::vector<int>(out.size()));
    float* y_fast = io.upload(std::vector<float>(out.size()));
    int* argmax_fast = io.upload(std::vector<int>(out.size()));
    max_pool_forward(io.stream(), x, c.shape, y, argmax);
    max_pool_forward_fast(io.stream(), x, c.shape, y_fast, argmax_fast);
    EXPECT_EQ(io.download(y, out.size()), io.download(y_fast, out.size()));
    EXPECT_EQ(io.download(argmax, out.size()), io.download(argmax_fast, out.size()));
    const float* dy = io.upload(random_values(out.size(), 4));
    float* dx = io.upload(std::vector<float>(c.shape.size(), -7.0f));
    float* dx_fast = io.upload(std::vector<float>(c.shape.size(), 7.0f));
    max_pool_backward(io.stream(), dy, argmax, c.shape, dx);
    max_pool_backward_fast(io.stream(), dy, argmax, c.shape, dx_fast);
    EXPECT_EQ(io.download(dx, c.shape.size()), io.download(dx_fast, c.shape.size()));
  }
}

TEST(FastHostOpsThreads, SplittingTheBatchGivesTheTwinsBits) {
  // Each op splits a batch of 5 into three parts of whole images (parallel.hpp).
  testing::OpThreads setting(3);
  DeviceIo io(Backend::kHost);
  for (const Nhwc shape : {Nhwc{5, 12, 12, 64}, Nhwc{5, 24, 24, 3}}) {
    const float* x = io.upload(random_values(shape.size(), 11));
    float* dx = io.upload(std::vector<float>(shape.size(), -7.0f));
    float* dx_fast = io.upload(std::vector<float>(shape.size(), 7.0f));
    const Nhwc out = math::max_pool_output_shape(shape);
    float* y = io.upload(std::vector<float>(out.size()));
    int* argmax = io.upload(std::vector<int>(out.size()));
    float* y_fast = io.upload(std::vector<float>(out.size()));
    int* argmax_fast = io.upload(std::vector<int>(out.size(), -1));
    max_pool_forward(io.stream(), x, shape, y, argmax);
    max_pool_forward_fast(io.stream(), x, shape, y_fast, argmax_fast);
    EXPECT_EQ(io.download(y, out.size()), io.download(y_fast, out.size())) << "max_pool";
    EXPECT_EQ(io.download(argmax, out.size()), io.download(argmax_fast, out.size()));
    const float* dy = io.upload(random_values(out.size(), 12));
    max_pool_backward(io.stream(), dy, argmax, shape, dx);
    max_pool_backward_fast(io.stream(), dy, argmax, shape, dx_fast);
    EXPECT_EQ(io.download(dx, shape.size()), io.download(dx_fast, shape.size()))
        << "max_pool_grad";
  }
}

TOWERS_INSTANTIATE_BOTH_BACKENDS(FastHostOps);

}  // namespace
}  // namespace towers::ops
