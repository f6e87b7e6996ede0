// SPDX-License-Identifier: MIT
// The tutorial's schedule (tf.train.exponential_decay, staircase) and its two updates,
// each one op over the whole flat buffer.
#include "model/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/cuda/scalar_updates.hpp"
#include "kernels/host/kernels.hpp"
#include "model/ops.hpp"
#include "model/parameters.hpp"

namespace towers::model {

std::int64_t decay_steps(int batch_size, int num_towers) {
  // int(num_batches_per_epoch * NUM_EPOCHS_PER_DECAY), computed in double as Python does.
  const double batches_per_epoch =
      static_cast<double>(kNumExamplesPerEpochForTrain) / batch_size / num_towers;
  return static_cast<std::int64_t>(batches_per_epoch * kNumEpochsPerDecay);
}

float learning_rate(std::int64_t global_step, std::int64_t decay_steps) {
  const std::int64_t decays = global_step / decay_steps;  // staircase: floor
  return kInitialLearningRate *
         static_cast<float>(std::pow(static_cast<double>(kLearningRateDecayFactor), decays));
}

float moving_average_decay(std::int64_t global_step) {
  const double step = static_cast<double>(global_step);
  return static_cast<float>(std::min(static_cast<double>(kMovingAverageDecay),
                                     (1.0 + step) / (10.0 + step)));
}

void apply_gradients(Stream& stream, float lr, const float* grads, float* params) {
  ops::sgd_update(stream, static_cast<int>(kNumParameters), lr, grads, params);
}

void update_moving_averages(Stream& stream, float decay, const float* params, float* shadow) {
  ops::ema_update(stream, static_cast<int>(kNumParameters), decay, params, shadow);
}

void apply_update(Stream& stream, std::int64_t global_step, std::int64_t steps_per_decay,
                  const float* grads, float* params, float* averages) {
  apply_gradients(stream, learning_rate(global_step, steps_per_decay), grads, params);
  update_moving_averages(stream, moving_average_decay(global_step), params, averages);
}

void apply_gradients_on_host(float lr, const float* grads, float* params) {
  host::sgd_update(static_cast<math::Index>(kNumParameters), lr, grads, params);
}

void update_moving_averages_on_host(float decay, const float* params, float* shadow) {
  host::ema_update(static_cast<math::Index>(kNumParameters), decay, params, shadow);
}

}  // namespace towers::model

namespace towers::model {

void apply_gradients(Stream& stream, const float* learning_rate, const float* grads, float* params) {
  const int n = static_cast<int>(kNumParameters);
  stream.launch(
      "sgd_update", [=] { host::sgd_update(n, *learning_rate, grads, params); },
      [=](const CudaLaunchContext& c) { cuda::sgd_update_at(c, n, learning_rate, grads, params); });
}

void update_moving_averages(Stream& stream, const float* decay, const float* params, float* shadow) {
  const int n = static_cast<int>(kNumParameters);
  stream.launch(
      "ema_update", [=] { host::ema_update(n, *decay, params, shadow); },
      [=](const CudaLaunchContext& c) { cuda::ema_update_at(c, n, decay, params, shadow); });
}

}  // namespace towers::model
