// SPDX-License-Identifier: MIT
// HostVariables: chapter 2's placement, the tutorial's: the variables live on the host
// ("/cpu:0"), the parameters in pinned memory so that the copies to the devices are
// asynchronous, their moving averages beside them. The step averages the towers'
// gradients and updates both there; each device then gets a copy of the parameters.
// Used from one host thread. Introduced in chapter 2.
#pragma once

#include <vector>

#include "parallel/placement.hpp"
#include "runtime/device.hpp"

namespace towers {

/// The variables in host memory. Introduced in chapter 2.
class HostVariables : public Placement {
 public:
  /// Allocates the parameters in pinned memory of `host_side`'s runtime, and the moving
  /// averages; load_from_host() fills them.
  explicit HostVariables(Device& host_side);

  /// [kNumParameters] pinned host memory: the parameters.
  float* params() { return params_.as<float>(); }
  /// [kNumParameters] host memory: their moving averages.
  float* averages() { return averages_.data(); }

  std::string where() const override { return "on the host"; }
  void state_to_host(model::TrainingState& state) override;
  void params_to_host(float* params) override;
  void load_from_host(const model::TrainingState& state) override;

 private:
  Buffer params_;
  std::vector<float> averages_;
};

}  // namespace towers
