// SPDX-License-Identifier: MIT
// harness/evaluate: precision @ 1 as cifar10_eval.py counts it — whole batches, the last
// wrapping around to the first images, so 10 images in batches of 4 are 12 predictions,
// the same as evaluating those 12 images outright.
#include "harness/evaluate.hpp"

#include <gtest/gtest.h>

#include "data/synthetic.hpp"
#include "model/parameters.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

TEST(Precision, IsCorrectOverPredictions) {
  EXPECT_EQ(Precision{}.precision_at_1(), 0.0);
  EXPECT_DOUBLE_EQ((Precision{3, 12}).precision_at_1(), 0.25);
}

TEST(Evaluate, TheLastBatchWrapsAroundToTheFirstImages) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  Device& device = rt->device(0);
  auto stream = device.create_stream();
  model::Network network(device, /*batch_size=*/4);
  std::vector<float> host(model::kNumParameters);
  model::initialize_parameters(5, host.data());
  Buffer params = device.allocate(host.size() * sizeof(float));
  stream->copy(params.data(), host.data(), host.size() * sizeof(float));
  stream->synchronize();

  const data::Dataset ten = data::generate_synthetic(3, data::Split::kTest, 0, 10);
  data::Dataset twelve = ten;
  twelve.append(data::generate_synthetic(3, data::Split::kTest, 0, 2));  // images 0 and 1 again

  const Precision wrapped = evaluate(device, *stream, network, params.as<float>(), ten);
  const Precision outright = evaluate(device, *stream, network, params.as<float>(), twelve);
  EXPECT_EQ(wrapped.predictions, 12);
  EXPECT_EQ(outright.predictions, 12);
  EXPECT_EQ(wrapped.correct, outright.correct);
  EXPECT_GE(wrapped.correct, 0);
  EXPECT_LE(wrapped.correct, 12);
}

}  // namespace
}  // namespace towers
