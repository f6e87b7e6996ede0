// SPDX-License-Identifier: MIT
// average_gradients: where towers meet.
//
// Chapter 2 averages on the host, as the tutorial's average_gradients() does on /cpu:0:
// every tower's gradients are copied to host memory first (the host waits for them).
// Chapter 3 averages on one device with peer copies ordered by events: nothing waits on
// the host, and the device starts summing tower i as soon as tower i is done.
//
// Both sum in tower order, g0 + g1 + ... + g(N-1), then multiply by 1/N, so for the
// same tower gradients they produce bit-identical averages on the host backend.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "parallel/tower.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// average[n] = mean over towers of tower_grads[t][n], on the host (chapter 2).
void average_gradients_on_host(const std::vector<const float*>& tower_grads, std::size_t n,
                               float* average);

/// Averages the towers' gradients on one device (chapter 3). Owns a stream on that device,
/// tagged with no tower, and receive buffers for towers on other devices.
class DeviceAverage {
 public:
  /// Averages on `root` for the towers in `towers` (which must outlive this object).
  DeviceAverage(Device& root, const std::vector<std::unique_ptr<Tower>>& towers);

  /// Enqueues, on stream(): for each tower, wait for its `done` event, peer-copy its
  /// gradients to the root (if elsewhere) and add them up; then scale by 1/N. The result
  /// is left in tower 0's gradient buffer (tower 0 lives on the root). Returns at once.
  const float* average_gradients();

  /// The stream the average (and whatever the caller enqueues after it) runs on.
  Stream& stream() { return *stream_; }

 private:
  Device& root_;
  const std::vector<std::unique_ptr<Tower>>& towers_;
  std::unique_ptr<Stream> stream_;
  std::vector<Buffer> received_;  // [towers]; empty for towers on the root device
};

}  // namespace towers
