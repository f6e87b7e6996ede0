// SPDX-License-Identifier: MIT
// The tutorial's schedule: decay_steps for one and two towers, the staircase learning
// rate at its boundaries, the moving-average decay's warm-up, and the two updates.
#include <gtest/gtest.h>

#include <vector>

#include "device_io.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "runtime/graph.hpp"

namespace towers::model {
namespace {

TEST(Optimizer, DecayStepsMatchTheTutorial) {
  EXPECT_EQ(decay_steps(128, 1), 136718);  // int(50000 / 128 * 350)
  EXPECT_EQ(decay_steps(128, 2), 68359);   // models PR #5658: divided by num_gpus
  EXPECT_EQ(decay_steps(128, 4), 34179);
  EXPECT_EQ(decay_steps(64, 2), 136718);
}

TEST(Optimizer, LearningRateDropsTenfoldAtEachBoundary) {
  const std::int64_t d = decay_steps(128, 1);
  EXPECT_FLOAT_EQ(learning_rate(0, d), 0.1f);
  EXPECT_FLOAT_EQ(learning_rate(d - 1, d), 0.1f);
  EXPECT_FLOAT_EQ(learning_rate(d, d), 0.01f);
  EXPECT_FLOAT_EQ(learning_rate(2 * d - 1, d), 0.01f);
  EXPECT_FLOAT_EQ(learning_rate(2 * d, d), 0.001f);
}

TEST(Optimizer, MovingAverageDecayWarmsUpTo09999) {
  EXPECT_FLOAT_EQ(moving_average_decay(0), 0.1f);         // (1 + 0) / (10 + 0)
  EXPECT_FLOAT_EQ(moving_average_decay(90), 0.91f);       // 91 / 100
  EXPECT_FLOAT_EQ(moving_average_decay(89990), 0.9999f);  // 89991 / 90000
  EXPECT_FLOAT_EQ(moving_average_decay(1000000), 0.9999f);
}

TEST(Optimizer, UpdatesCoverTheWholeFlatBuffer) {
  testing::DeviceIo io(Backend::kHost);
  float* params = io.upload(std::vector<float>(kNumParameters, 1.0f));
  const float* grads = io.upload(std::vector<float>(kNumParameters, 2.0f));
  float* shadow = io.upload(std::vector<float>(kNumParameters, 0.0f));
  apply_gradients(io.stream(), 0.25f, grads, params);      // 1 - 0.25 * 2 = 0.5
  update_moving_averages(io.stream(), 0.75f, params, shadow);  // 0 - 0.25 * (0 - 0.5)
  const std::vector<float> p = io.download(params, kNumParameters);
  const std::vector<float> s = io.download(shadow, kNumParameters);
  EXPECT_EQ(p.front(), 0.5f);
  EXPECT_EQ(p.back(), 0.5f);
  EXPECT_EQ(s.front(), 0.125f);
  EXPECT_EQ(s.back(), 0.125f);
}

// The scalars a graph reads from device memory (chapter 7): same bits as passing them by
// value, and a captured update uses the value written before each launch.
TEST(Optimizer, UpdatesReadingTheirScalarFromDeviceMemoryMatchByValueAndFollowItInAGraph) {
  testing::DeviceIo io(Backend::kHost);
  std::vector<float> start(kNumParameters);
  for (std::size_t i = 0; i < start.size(); ++i) start[i] = 0.001f * static_cast<float>(i % 997);
  float* by_value = io.upload(start);
  float* by_address = io.upload(start);
  const float* grads = io.upload(std::vector<float>(kNumParameters, 0.3f));
  float* lr = io.upload(std::vector<float>{0.1f});
  apply_gradients(io.stream(), 0.1f, grads, by_value);
  apply_gradients(io.stream(), lr, grads, by_address);
  EXPECT_EQ(io.download(by_value, kNumParameters), io.download(by_address, kNumParameters));

  auto graph = capture_graph(io.runtime(), io.stream(),
                             [&] { apply_gradients(io.stream(), lr, grads, by_address); });
  io.write(lr, std::vector<float>{0.5f});  // after the capture: the launch must use 0.5
  apply_gradients(io.stream(), 0.5f, grads, by_value);
  graph->launch(io.stream());
  EXPECT_EQ(io.download(by_value, kNumParameters), io.download(by_address, kNumParameters));
}

}  // namespace
}  // namespace towers::model
