// SPDX-License-Identifier: MIT
// Exercise 09: ZeRO-1's update, between the all-reduce's two halves (chapter 8).
//
// N towers hold the parameters and the gradients whole, but the moving averages of one
// shard of the parameters only. One step:
//
//   1. reduce-scatter the gradients: afterwards tower r's gradients hold, in tower r's
//      shard, the element-wise MEAN over all towers; everywhere else, partial sums
//      (scratch: what the ring left there, not to be read);
//   2. each tower applies its shard of the mean gradient to its shard of the parameters
//      (sgd), then moves its shard of the moving averages toward the NEW parameters;
//   3. all-gather the parameters: every tower's shard is copied to every other tower.
//
// The shards are chapter 8's ring's: the buffer of `count` elements is cut into N
// contiguous chunks, chunk c starting where chunk c-1 ends, the first count % N chunks one
// element longer than the others (count / N); tower r owns chunk (r + 1) mod N, the one
// its last reduce-scatter step completes (exercise 03). With count < N some towers own
// an empty shard.
//
// The grader supplies the collectives and watches them: what each call is given, and the
// data in every tower's buffers when it is called.
#pragma once

#include <cstddef>
#include <span>

namespace towers::exercises {

/// A tower's shard: elements [offset, offset + size) of the parameters.
struct Shard {
  std::size_t offset = 0;  ///< first element
  std::size_t size = 0;    ///< elements; 0 when the tower owns none (count < towers)
};

/// The shard tower `tower` (0..towers-1) owns of `count` elements over `towers` towers:
/// ring chunk (tower + 1) mod towers, as described above.
Shard shard_of(std::size_t count, int towers, int tower);

/// The all-reduce's two halves, called apart. The grader implements them.
class Collectives {
 public:
  virtual ~Collectives() = default;
  /// buffers[r] (every tower's, in tower order, `count` floats each): afterwards, in
  /// shard_of(count, N, r), buffers[r] holds the mean of that range over all towers; the
  /// rest of buffers[r] holds partial sums.
  virtual void reduce_scatter(std::span<float* const> buffers, std::size_t count) = 0;
  /// buffers[r] (every tower's, in tower order): afterwards every buffer holds, in each
  /// tower s's shard, what buffers[s] held there.
  virtual void all_gather(std::span<float* const> buffers, std::size_t count) = 0;
};

/// What one tower holds.
struct ShardedTower {
  float* params = nullptr;    ///< [count]: the parameters, whole
  float* grads = nullptr;     ///< [count]: this step's gradients of this tower, whole
  float* averages = nullptr;  ///< [its shard's size]: averages[j] is the moving average
                              ///< of parameter shard.offset + j
};

/// The tutorial's update of n parameters: param[i] -= learning_rate * grad[i].
inline void sgd(std::size_t n, float learning_rate, const float* grad, float* param) {
  for (std::size_t i = 0; i < n; ++i) param[i] = param[i] - learning_rate * grad[i];
}

/// The tutorial's moving average of n parameters (tf.train.ExponentialMovingAverage):
/// average[i] -= (1 - decay) * (average[i] - param[i]).
inline void moving_average(std::size_t n, float decay, const float* param, float* average) {
  for (std::size_t i = 0; i < n; ++i) average[i] = average[i] - (1.0f - decay) * (average[i] - param[i]);
}

/// One ZeRO-1 step of towers.size() towers over `count` parameters: reduce-scatter the
/// gradients, update each tower's shard (sgd with `learning_rate`, then the moving
/// averages with `decay`), all-gather the parameters. Afterwards every tower holds the
/// parameters chapter 4's unsharded step gives, and its shard of the moving averages.
/// The towers' buffers are the whole state: nothing is kept from one call to the next (a
/// program may step two models, and a resume loads the averages between two steps).
void sharded_step(Collectives& collectives, std::span<const ShardedTower> towers,
                  std::size_t count, float learning_rate, float decay);

}  // namespace towers::exercises
