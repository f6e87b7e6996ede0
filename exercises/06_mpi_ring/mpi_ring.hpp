// SPDX-License-Identifier: MIT
// Exercise 06: chapter 4's ring all-reduce between processes, over MPI_Sendrecv.
//
// Every rank of `comm` holds `count` floats at `data`; ring_average() leaves on every rank
// the element-wise mean of all ranks' buffers, in place, with the ring of chapter 4:
//
//   reduce-scatter, s = 0..n-2: send chunk (r - s) to rank r+1, receive chunk (r - 1 - s)
//     from rank r-1 into `receive`, add it into your own chunk (data += receive).
//   scale: the chunk (r + 1) you now own holds the sum over all ranks; multiply it by the
//     float 1.0f / n (not a division: chapter 4 multiplies, and the bits must match).
//   all-gather, t = 0..n-2: send chunk (r + 1 - t) to rank r+1, receive chunk (r - t) from
//     rank r-1 straight into place.
//
// One MPI_Sendrecv per step, 2(n-1) in all, even for empty chunks; no other MPI data
// calls. `receive` holds at least chunk_of(count, n, 0).size floats. With one rank or no
// data, nothing to do.
#pragma once

#include <mpi.h>

#include <cstddef>

namespace towers::exercises {

/// One rank's share of `count` elements split `n` ways (chapter 4's ring_chunk): the first
/// count % n chunks hold one element more; chunks are empty when count < n.
struct Chunk {
  std::size_t offset = 0;  ///< first element
  std::size_t size = 0;    ///< elements
};

/// Chunk `index` (0..n-1) of `count` elements split `n` ways.
inline Chunk chunk_of(std::size_t count, int n, int index) {
  const auto parts = static_cast<std::size_t>(n), i = static_cast<std::size_t>(index);
  const std::size_t base = count / parts, extra = count % parts;
  return Chunk{i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

/// The ring all-reduce (mean) of `count` floats at `data` across the ranks of `comm`.
void ring_average(float* data, std::size_t count, float* receive, MPI_Comm comm);

}  // namespace towers::exercises
