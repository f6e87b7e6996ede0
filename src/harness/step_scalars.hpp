// SPDX-License-Identifier: MIT
// StepScalars: the learning rate and moving-average decay of a step, where a graph reads them.
//
// A captured step (chapter 7) replays with the arguments it was captured with; values
// that change every step must therefore live in memory the graph reads, as TF1's
// global_step lives in a variable. The host writes this step's values into a fixed pinned
// buffer with set(); copy_to_device(), captured as the step's first node, copies them to
// the fixed device buffer that the update ops read (learning_rate(), decay()).
// set() must not run while a launch that reads the values is in flight (synchronize first).
#pragma once

#include "runtime/device.hpp"

namespace towers {

/// Two floats on one device plus their pinned host twins. Introduced in chapter 7.
class StepScalars {
 public:
  /// Allocates both buffers on `device` (before capturing: allocation is not capturable).
  explicit StepScalars(Device& device);

  /// Host: this step's learning rate and moving-average decay, for the next launch.
  void set(float learning_rate, float decay);
  /// Enqueues the copy of the values set() wrote to the device buffer (a graph node).
  void copy_to_device(Stream& stream);

  /// Device memory holding the learning rate, for model::apply_gradients.
  const float* learning_rate() const { return on_device_.as<float>(); }
  /// Device memory holding the decay, for model::update_moving_averages.
  const float* decay() const { return on_device_.as<float>() + 1; }

 private:
  Buffer on_host_;    // pinned [learning_rate, decay]
  Buffer on_device_;  // [learning_rate, decay]
};

}  // namespace towers
