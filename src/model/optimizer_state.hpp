// SPDX-License-Identifier: MIT
// OptimizerState: the state one tower keeps for the parameters it updates, and the
// update itself, for each of chapter 8's optimizers (--optimizer).
//
// It covers `count` consecutive parameters: all of them when every tower updates its
// whole copy (--zero 0), or the shard the tower owns after the reduce-scatter (--zero 1 to 3).
// The state is allocated on the tower's device under the ledger's optimizer-state
// category, so sharding it shows in the ledger exactly as the moving averages' does.
// Every rule is element-wise: updating a shard gives the bits the same range gets when
// the whole buffer is updated, which is why ZeRO-1 can split the update at all.
// The moving averages are not in here: every optimizer keeps them, the chapter updates
// them after apply() as chapter 4 does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/optimizer_kind.hpp"
#include "runtime/device.hpp"

namespace towers::model {

/// Momentum's decay of the velocity (the usual 0.9).
inline constexpr float kMomentum = 0.9f;
/// Adam's learning rate is the tutorial's times this: 0.1 * 0.01 = 0.001, the Adam
/// paper's default (see OptimizerState::apply for why the tutorial's rate is too large).
inline constexpr float kAdamLearningRateScale = 0.01f;

/// One tower's optimizer state for `count` parameters, and the rule that updates them.
class OptimizerState {
 public:
  /// Allocates optimizer_own_floats(optimizer) * count floats on `device` (category
  /// optimizer state) and zeroes them on `stream`: no velocity and no moments before
  /// the first step.
  OptimizerState(Optimizer optimizer, Device& device, Stream& stream, std::size_t count);

  /// Enqueues one update of the `count` parameters at `params` from the mean gradients at
  /// `grads`, with the tutorial's learning rate `learning_rate` at `global_step` (0-based).
  /// SGD is exactly chapter 4's apply_gradients on these elements.
  void apply(Stream& stream, std::int64_t global_step, float learning_rate, const float* grads,
             float* params);

  /// Which rule this is.
  Optimizer optimizer() const { return optimizer_; }

  /// The state's arrays, each `count` floats on the device: none (SGD), the velocity
  /// (momentum), the first then the second moments (Adam). A checkpoint saves each one
  /// whole, the towers' ranges put together (parallel/shard_reader.hpp).
  int parts() const { return optimizer_own_floats(optimizer_); }
  /// Array `part` (0 <= part < parts()).
  float* part(int part) { return state_.as<float>() + static_cast<std::size_t>(part) * count_; }

  /// Enqueues on `stream` the copy of a checkpoint's state into this tower's range:
  /// `whole` holds parts() arrays of `whole_count` floats each (TrainingState::optimizer_state),
  /// and this tower's `count` floats of each start at `offset`. After the constructor's
  /// zeroes, on the same stream, so the resumed values are the ones the first step reads.
  void restore(Stream& stream, const float* whole, std::size_t whole_count, std::size_t offset);

 private:
  Optimizer optimizer_;
  std::size_t count_;
  Buffer state_;  // momentum: the velocity; Adam: m, then v (count_ floats each)
};

}  // namespace towers::model
