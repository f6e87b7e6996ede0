// SPDX-License-Identifier: MIT
// Training rules of the tutorial: learning-rate schedule, SGD, moving averages.
//
// All functions that take a Stream only enqueue. Introduced in chapter 1.
#pragma once

#include <cstdint>

#include "runtime/stream.hpp"

namespace towers::model {

/// The tutorial's constants (cifar10.py).
inline constexpr float kInitialLearningRate = 0.1f;
inline constexpr double kNumEpochsPerDecay = 350.0;
inline constexpr float kLearningRateDecayFactor = 0.1f;
inline constexpr float kMovingAverageDecay = 0.9999f;
inline constexpr int kNumExamplesPerEpochForTrain = 50000;

/// decay_steps = int(examples_per_epoch / (batch_size * num_towers) * 350), as in
/// cifar10_multi_gpu_train.py after its fix (batches per epoch divided by the towers).
std::int64_t decay_steps(int batch_size, int num_towers);

/// lr = 0.1 * 0.1^floor(global_step / decay_steps) (staircase exponential decay).
float learning_rate(std::int64_t global_step, std::int64_t decay_steps);

/// The moving-average decay at `global_step`: min(0.9999, (1 + step) / (10 + step)).
float moving_average_decay(std::int64_t global_step);

/// Enqueues params -= lr * grads over the whole flat buffer.
void apply_gradients(Stream& stream, float lr, const float* grads, float* params);

/// Enqueues shadow -= (1 - decay) * (shadow - params) over the whole flat buffer.
void update_moving_averages(Stream& stream, float decay, const float* params, float* shadow);

/// The tutorial's update at `global_step`, enqueued: apply_gradients() with
/// learning_rate(global_step, steps_per_decay), then update_moving_averages() with
/// moving_average_decay(global_step). Every chapter whose towers each update their own copy
/// (4, 5, 6) calls it once per tower.
void apply_update(Stream& stream, std::int64_t global_step, std::int64_t steps_per_decay,
                  const float* grads, float* params, float* averages);

/// apply_gradients() on host memory, run now on the calling thread: chapter 2's variables
/// live on the host ("/cpu:0"), where its towers meet.
void apply_gradients_on_host(float lr, const float* grads, float* params);

/// update_moving_averages() on host memory, run now on the calling thread (chapter 2).
void update_moving_averages_on_host(float decay, const float* params, float* shadow);

/// As apply_gradients(), with the learning rate read from device memory when the op runs:
/// a captured graph (chapter 7) then uses the value the host wrote before each launch.
void apply_gradients(Stream& stream, const float* learning_rate, const float* grads, float* params);

/// As update_moving_averages(), with the decay read from device memory when the op runs.
void update_moving_averages(Stream& stream, const float* decay, const float* params, float* shadow);

}  // namespace towers::model
