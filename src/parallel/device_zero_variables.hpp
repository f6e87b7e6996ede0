// SPDX-License-Identifier: MIT
// DeviceZeroVariables: chapter 3's placement (and chapter 7's, which captures chapter 3's
// step). The variables live on device 0 (the tutorial's CPU variables moved to the first
// GPU): the parameters in device 0's Replica, their moving averages beside them. Every
// other device holds a copy of the parameters for its towers to read; the chapter's step
// refreshes those copies after each update ("broadcast params"), and load_from_host()
// gives every copy the same values. Copies go through `meet`, device 0's stream where the
// towers meet. Used from one host thread. Introduced in chapter 3.
#pragma once

#include <memory>
#include <vector>

#include "parallel/placement.hpp"
#include "parallel/tower.hpp"

namespace towers {

/// The variables on device 0, the other devices' parameter copies beside them.
/// Introduced in chapter 3.
class DeviceZeroVariables : public Placement {
 public:
  /// `replicas`: one per device in use, replicas[0] on device 0 (TowerSet::replicas);
  /// allocates the moving averages on device 0. load_from_host() fills them all.
  DeviceZeroVariables(std::vector<std::unique_ptr<Replica>>& replicas, Stream& meet);

  /// Device 0's replica: the parameters every update writes.
  Replica& root() { return *replicas_[0]; }
  /// [kNumParameters] on device 0: the parameters.
  float* params() { return root().params.as<float>(); }
  /// [kNumParameters] on device 0: their moving averages.
  float* averages() { return averages_.as<float>(); }

  std::string where() const override { return "on device 0"; }
  void state_to_host(model::TrainingState& state) override;
  void params_to_host(float* params) override;
  void load_from_host(const model::TrainingState& state) override;

 private:
  std::vector<std::unique_ptr<Replica>>& replicas_;
  Stream& meet_;
  Buffer averages_;
};

}  // namespace towers
