// SPDX-License-Identifier: MIT
// OneDeviceVariables: chapter 1's placement, every variable on the one device that trains.
// The parameters and their moving averages, kNumParameters floats each, in device memory
// of `device`; the stream given is the one every copy to or from the host goes through.
// Chapter 5's RankVariables are the same thing per process: a rank's copy on its device.
// Used from one host thread. Introduced in chapter 1.
#pragma once

#include "parallel/placement.hpp"
#include "runtime/device.hpp"
#include "runtime/stream.hpp"

namespace towers {

/// The variables of a model trained on one device. Introduced in chapter 1.
class OneDeviceVariables : public Placement {
 public:
  /// Allocates the parameters and moving averages on `device` (the memory ledger's
  /// parameters and optimizer state); copies go through `stream`. Nothing is copied yet:
  /// load_from_host() fills them.
  OneDeviceVariables(Device& device, Stream& stream);

  /// [kNumParameters] on the device: what the step trains.
  float* params() { return params_.as<float>(); }
  /// [kNumParameters] on the device: their moving averages (--eval, checkpoints).
  float* averages() { return averages_.as<float>(); }

  std::string where() const override { return "on one device"; }
  void state_to_host(model::TrainingState& state) override;
  void params_to_host(float* params) override;
  void load_from_host(const model::TrainingState& state) override;

 private:
  Stream& stream_;
  Buffer params_, averages_;
};

/// Chapter 5's placement: each rank keeps a whole copy on its own device. The copies are
/// equal after every step (chapter 5's check), so any rank's, rank 0's, is the job's.
/// Introduced in chapter 5.
class RankVariables : public OneDeviceVariables {
 public:
  using OneDeviceVariables::OneDeviceVariables;
  std::string where() const override { return "a copy per rank"; }
};

/// Copies `count` floats from device memory to the host through `stream` and waits: what
/// every placement's state_to_host() does for each part it holds.
void copy_to_host(Stream& stream, float* host, const float* device, std::size_t count);

/// Copies `count` floats from the host to device memory through `stream` (no wait).
void copy_from_host(Stream& stream, float* device, const float* host, std::size_t count);

}  // namespace towers
