// SPDX-License-Identifier: MIT
// Test scaffolding for the all-reduce: towers, each with a stream and a flat buffer on its
// device, filled with values whose sums are exact in float, and the exact oracle.
//
// Inputs are small integers, so every partial sum is exact whatever order a ring or NCCL
// adds them in; the only rounding left is the one multiply by 1/n (exact for n a power of
// two). The results must therefore equal the oracle bit for bit.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "parallel/allreduce.hpp"
#include "runtime/runtime.hpp"

namespace towers::testing {

/// Input element e of tower t in round `round`: an integer in [-8, 8].
inline float input_value(int tower, std::size_t e, int round = 0) {
  return static_cast<float>(static_cast<int>((e * 7 + static_cast<std::size_t>(tower) * 13 +
                                              static_cast<std::size_t>(round) * 5) % 17) - 8);
}

/// What every tower must hold after averaging `rounds` times (rounds > 1: the mean of the
/// means): the exact sum, then one multiply by 1/n, as both implementations round.
std::vector<float> expected_mean(int towers, std::size_t count, int round = 0);

/// Towers on the given devices of `runtime`, each with its own stream (tagged with its
/// tower index) and a device buffer of `count` floats.
class TowerBuffers {
 public:
  TowerBuffers(Runtime& runtime, std::vector<int> device_of_tower, std::size_t count);

  int towers() const { return static_cast<int>(streams_.size()); }
  std::span<const int> device_of_tower() const { return device_of_tower_; }
  std::span<float* const> buffers() const { return pointers_; }
  std::span<Stream* const> streams() const { return stream_pointers_; }
  Stream& stream(int tower) { return *streams_[tower]; }

  /// Enqueues uploading input_value(t, e, round) into every tower's buffer; no host wait,
  /// so average() must order itself after these copies. Streams must be idle.
  void upload(int round = 0);
  /// Enqueues copying every buffer out, synchronizes every stream, returns the copies.
  std::vector<std::vector<float>> download();
  /// Synchronizes every stream.
  void synchronize();

 private:
  std::size_t count_;
  std::vector<int> device_of_tower_;
  std::vector<Buffer> device_;   // per tower: [count] floats on its device
  std::vector<float*> pointers_;
  std::vector<Buffer> staging_;  // per tower: [count] floats of pinned host memory
  // Declared last, so destroyed first: a stream drains its work before the buffers go.
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Stream*> stream_pointers_;
};

/// n towers, tower t on device t % devices.
std::vector<int> round_robin(int towers, int devices);

}  // namespace towers::testing
