// SPDX-License-Identifier: MIT
// Placement: where the training state lives, as a type. The lesson of most chapters is a
// placement of the same variables (the parameters, their moving averages, the optimizer's
// own state): on one device (chapter 1), on the host (2), on device 0 (3, 7), a copy per
// tower (4, 6), a copy per rank (5), a shard per tower at a ZeRO stage (8), a range of
// layers per pipeline stage (9), a slice per tensor rank (10).
//
// Whatever the placement, a run needs two things of it, in the spirit of PyTorch's
// torch.distributed.checkpoint.Stateful (state_dict / load_state_dict): put the whole
// state together on the host, in chapter 1's flat layout, and take such a state back,
// each holder its part. The harness writes checkpoints, --save-params, --eval and the
// divergence check over these verbs alone (harness/training_run.hpp), so a chapter adds a
// placement, never a callback or a branch in a shared loop.
//
// The verbs wait for the streams they read or write (a copy to or from the host), so call
// them between steps, from the thread that enqueues the steps. Introduced in chapter 1.
#pragma once

#include <string>

#include "model/checkpoint.hpp"

namespace towers {

/// Where the variables live, and the two verbs that put them together and take them back.
class Placement {
 public:
  virtual ~Placement() = default;

  /// Where the variables are, for the log ("on device 0", "a copy per tower").
  virtual std::string where() const = 0;
  /// The whole state put together on the host: state.params and state.moving_averages
  /// (model::kNumParameters each) and state.optimizer_state (the optimizer's own floats
  /// for every parameter, state.optimizer's; empty for SGD) are overwritten; global_step,
  /// input and optimizer are left as they are. Waits for the copies.
  virtual void state_to_host(model::TrainingState& state) = 0;
  /// The parameters alone, put together into `params` (model::kNumParameters floats): the
  /// divergence check and --save-params need no more. Waits for the copies.
  virtual void params_to_host(float* params) = 0;
  /// Takes `state` back: each holder gets its part of state.params, moving_averages and
  /// optimizer_state (which may be empty: an optimizer that keeps none, or a fresh start,
  /// whose state starts at zero). Waits for the copies.
  virtual void load_from_host(const model::TrainingState& state) = 0;
};

}  // namespace towers
