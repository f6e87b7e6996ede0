// SPDX-License-Identifier: MIT
// Scaffolding for the all-reduce's tests and benchmarks (bench_allreduce and
// bench_allreduce_mpi compile it in too): towers, each with a stream and a flat buffer on
// its device, filled with values whose sums are exact in float, and the exact oracle.
//
// Inputs are small integers, so every partial sum is exact whatever order a ring or NCCL
// adds them in; the only rounding left is the one multiply by 1/n (exact for n a power of
// two). The results must therefore equal the oracle bit for bit. Like nccl-tests' data, an
// input depends on its element only through e % kInputPeriod, so checking a buffer of any
// size costs one mean per residue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "parallel/allreduce.hpp"
#include "runtime/runtime.hpp"

namespace towers::testing {

/// Inputs repeat every kInputPeriod elements.
inline constexpr std::size_t kInputPeriod = 17;

/// Input element e of tower t in round `round`: an integer in [-8, 8].
inline float input_value(int tower, std::size_t e, int round = 0) {
  return static_cast<float>(
      static_cast<int>((e * 7 + static_cast<std::size_t>(tower) * 13 +
                        static_cast<std::size_t>(round) * 5) % kInputPeriod) - 8);
}

/// What every tower must hold after averaging round `round`'s inputs of `towers` towers:
/// the exact sum, then one multiply by 1/n, as the ring and NCCL's ncclAvg round.
std::vector<float> expected_mean(int towers, std::size_t count, int round = 0);

/// How many of data[0 .. count) differ from expected_mean(towers, count, round) by more
/// than `tolerance` (0: bit for bit).
long long count_wrong(const float* data, std::size_t count, int towers, float tolerance = 0,
                      int round = 0);

/// "" when every tower's copy in `got` equals `expected` bit for bit; otherwise where the
/// first one differs, e.g. "tower 1, element 7: 2.5 instead of 3" (EXPECT_EQ(..., "")).
std::string first_mismatch(const std::vector<std::vector<float>>& got,
                           const std::vector<float>& expected);

/// A runtime of `devices` simulated devices (the host backend).
std::unique_ptr<Runtime> host_runtime(int devices);

/// Towers on the given devices of `runtime`, each with its own stream (tagged with its
/// tower index) and a device buffer of `count` floats.
class TowerBuffers {
 public:
  TowerBuffers(Runtime& runtime, std::vector<int> device_of_tower, std::size_t count);

  int towers() const { return static_cast<int>(streams_.size()); }
  std::size_t count() const { return count_; }
  std::span<const int> device_of_tower() const { return device_of_tower_; }
  std::span<float* const> buffers() const { return pointers_; }
  std::span<Stream* const> streams() const { return stream_pointers_; }
  Stream& stream(int tower) { return *streams_[tower]; }

  /// Enqueues uploading input_value(t, e, round) into the first `count` floats (at most
  /// the buffer's) of every tower's buffer; no host wait, so average() must order itself
  /// after these copies. Streams must be idle.
  void upload(int round = 0, std::size_t count = SIZE_MAX);
  /// Enqueues copying every buffer out, synchronizes every stream, returns the copies.
  std::vector<std::vector<float>> download();
  /// Copies the first `count` floats of every buffer out, synchronizes, and counts the
  /// elements of all towers that differ from the mean of round `round` (see count_wrong).
  long long count_wrong(std::size_t count, float tolerance, int round = 0);
  /// Synchronizes every stream.
  void synchronize();

  /// Enqueues an upload that lands late on one tower: every buffer is zeroed first (an
  /// all-reduce that did not wait for the upload would sum these stale zeros), then tower
  /// `slow`'s stream spins `busy_ms` before upload() of round 0. Streams must be idle.
  void upload_late(int slow, double busy_ms);
  /// Enqueues, on every tower's stream after what it holds: copying the tower's buffer into
  /// `results`' buffer of that tower, then zeroing its own at once, as the next backward
  /// pass overwrites gradients. An all-reduce must be done with every buffer before that.
  void keep_then_overwrite(TowerBuffers& results);

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

/// Uploads round 0's inputs, averages them once with `allreduce` and returns
/// first_mismatch of the result against the exact mean: "" when every tower holds it.
std::string average_once(AllReduce& allreduce, TowerBuffers& towers);

/// n towers, tower t on device t % devices.
std::vector<int> round_robin(int towers, int devices);

}  // namespace towers::testing
