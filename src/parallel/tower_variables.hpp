// SPDX-License-Identifier: MIT
// TowerVariables: chapter 4's placement, shared by the chapters that keep it (4 and 6).
// Every tower owns its variables: the parameters and their moving averages, on the
// tower's device. Beside them, per tower, what the all-reduce and the update take: the
// gradient buffer and the stream. The copies are equal after every step (chapter 4's
// check), so tower 0's are the run's: state_to_host() reads them, load_from_host() gives
// every tower the same. Used from one host thread. Introduced in chapter 4.
#pragma once

#include <memory>
#include <vector>

#include "parallel/placement.hpp"
#include "parallel/tower.hpp"

namespace towers {

/// The variables every tower owns, and its gradients and stream, indexed by tower.
/// Introduced in chapter 4.
class TowerVariables : public Placement {
 public:
  /// Allocates each tower's parameters and moving averages on its device; load_from_host()
  /// fills them.
  explicit TowerVariables(std::vector<std::unique_ptr<Tower>>& towers);

  std::vector<float*> params;    ///< [tower] the tower's own parameters
  std::vector<float*> averages;  ///< [tower] their moving averages
  std::vector<float*> grads;     ///< [tower] the tower's gradient buffer (Tower::grads)
  std::vector<Stream*> streams;  ///< [tower] the tower's stream

  std::string where() const override { return "a copy per tower"; }
  void state_to_host(model::TrainingState& state) override;
  void params_to_host(float* params) override;
  void load_from_host(const model::TrainingState& state) override;

 private:
  std::vector<Buffer> owned_;  // the buffers behind params and averages
};

}  // namespace towers
