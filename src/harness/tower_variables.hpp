// SPDX-License-Identifier: MIT
// TowerVariables: chapter 4's ownership, shared by the chapters that keep it (4 and 6).
// Every tower owns its variables: the parameters and their moving averages, on the
// tower's device, both starting from the run's initial parameters. Beside them, per
// tower, what the all-reduce and the update take: the gradient buffer and the stream.
// Used from one host thread.
#pragma once

#include <vector>

#include "harness/tower_training.hpp"

namespace towers {

/// The variables every tower owns, and its gradients and stream, indexed by tower.
class TowerVariables {
 public:
  /// Allocates each tower's parameters and moving averages on its device, copies the
  /// initial parameters and averages (a resumed checkpoint's, or both from --seed) into
  /// them on the tower's stream and waits for the copies. Then has `training` read tower
  /// 0's parameters and averages (read_params_with) for its divergence check,
  /// --save-params and checkpoints: after every step the towers' copies are equal.
  explicit TowerVariables(TowerTraining& training);

  std::vector<float*> params;    ///< [tower] the tower's own parameters
  std::vector<float*> averages;  ///< [tower] their moving averages
  std::vector<float*> grads;     ///< [tower] the tower's gradient buffer (Tower::grads)
  std::vector<Stream*> streams;  ///< [tower] the tower's stream

 private:
  std::vector<Buffer> owned_;  // the buffers behind params and averages
};

}  // namespace towers
