// SPDX-License-Identifier: MIT
// Exercise 03: the ring all-reduce, on plain host buffers (chapter 4 runs it on streams).
//
// N towers stand in a ring; tower r receives only from its left neighbour r-1 (mod N).
// Every buffer is cut into N chunks (ring_chunk). A *step* moves one chunk per tower, all
// N transfers "at once" (here: one after the other, which is the same, because within a
// step no tower sends a chunk it is receiving):
//
//   reduce-scatter, steps s = 0..N-2: tower r receives chunk (r-1-s) mod N from tower r-1
//     and ADDS it into its own copy. After N-1 steps tower r holds the full sum of chunk
//     (r+1) mod N, its *owned* chunk, which it scales by 1/N: the mean, computed once.
//   all-gather, steps s = 0..N-2: tower r receives chunk (r-s) mod N, already a mean, from
//     tower r-1 and OVERWRITES its own copy. After N-1 steps every tower holds every mean.
//
// 2(N-1) steps, each moving count/N elements per tower, whatever N: why a ring scales.
// Each transfer is reported to Ring::on_transfer, so the grader can watch the schedule.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace towers::exercises {

/// A tower's share of a buffer: elements [offset, offset + size).
struct Chunk {
  std::size_t offset = 0;  ///< first element
  std::size_t size = 0;    ///< elements; 0 when count < towers
};

/// Chunk `index` (0..towers-1) of `count` elements split `towers` ways: the first
/// count % towers chunks get one element more, so sizes differ by at most one.
inline Chunk ring_chunk(std::size_t count, int towers, int index) {
  const std::size_t n = static_cast<std::size_t>(towers), i = static_cast<std::size_t>(index);
  const std::size_t base = count / n, extra = count % n;
  return Chunk{i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

/// One chunk moving one hop around the ring during one step.
struct Transfer {
  int from = 0;         ///< sending tower
  int to = 0;           ///< receiving tower: (from + 1) % towers
  int chunk = 0;        ///< which chunk (0..towers-1), see ring_chunk()
  bool reduce = false;  ///< true: the receiver adds it in (reduce-scatter); false: copies
};

/// The towers' buffers and an observer of every transfer.
struct Ring {
  /// buffers[r]: tower r's "device" memory, [count] floats; all the same size.
  std::vector<std::vector<float>> buffers;
  /// Called once per transfer, after the data moved; also for empty chunks. May be empty.
  std::function<void(const Transfer&)> on_transfer;

  /// N, the number of towers.
  int towers() const { return static_cast<int>(buffers.size()); }
};

/// Reduce-scatter step `step` (0..N-2): every tower r adds chunk (r-1-step) mod N of tower
/// r-1's buffer into the same chunk of its own, and reports the transfer.
void reduce_scatter_step(Ring& ring, int step);

/// All-gather step `step` (0..N-2): every tower r copies chunk (r-step) mod N of tower r-1's
/// buffer over the same chunk of its own, and reports the transfer.
void all_gather_step(Ring& ring, int step);

/// Averages ring.buffers in place: N-1 reduce-scatter steps, each tower scales its owned
/// chunk (r+1) mod N by 1/N, then N-1 all-gather steps. Afterwards every buffer holds the
/// element-wise mean of all of them. Throws std::invalid_argument when there are no
/// buffers or their sizes differ.
void ring_allreduce(Ring& ring);

}  // namespace towers::exercises
