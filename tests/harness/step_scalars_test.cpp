// SPDX-License-Identifier: MIT
// harness/step_scalars: what set() writes reaches the device buffers the update ops read,
// and only when copy_to_device() runs (a graph replays that copy, not the set()).
#include "harness/step_scalars.hpp"

#include <gtest/gtest.h>

#include "runtime/runtime.hpp"

namespace towers {
namespace {

TEST(StepScalars, TheDeviceSeesTheValuesOfTheLastCopy) {
  auto rt = Runtime::create({BackendChoice::kHost, 1});
  Device& device = rt->device(0);
  auto stream = device.create_stream();
  StepScalars scalars(device);
  float read[2] = {0, 0};
  scalars.set(0.1f, 0.9999f);
  scalars.copy_to_device(*stream);
  stream->copy(&read[0], scalars.learning_rate(), sizeof(float));
  stream->copy(&read[1], scalars.decay(), sizeof(float));
  stream->synchronize();
  EXPECT_EQ(read[0], 0.1f);
  EXPECT_EQ(read[1], 0.9999f);
  scalars.set(0.05f, 0.5f);  // not copied yet: the device keeps the old values
  stream->copy(&read[0], scalars.learning_rate(), sizeof(float));
  stream->synchronize();
  EXPECT_EQ(read[0], 0.1f);
  scalars.copy_to_device(*stream);
  stream->copy(&read[0], scalars.learning_rate(), sizeof(float));
  stream->copy(&read[1], scalars.decay(), sizeof(float));
  stream->synchronize();
  EXPECT_EQ(read[0], 0.05f);
  EXPECT_EQ(read[1], 0.5f);
}

}  // namespace
}  // namespace towers
