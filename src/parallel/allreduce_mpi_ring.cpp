// SPDX-License-Identifier: MIT
// Chapter 4's ring all-reduce between processes, over MPI_Sendrecv.
//
// The algorithm is allreduce_ring.cpp's, step for step; only the transport changed. In
// chapter 4 tower r *pulled* a chunk out of its left neighbour's buffer with a stream copy,
// ordered by events. Here no rank can read another's memory, so at every step each rank
// sends to its right neighbour exactly the chunk that neighbour used to pull, and receives
// from its left the chunk it used to pull. MPI_Sendrecv does both at once, so a ring of
// ranks that all send first and receive second cannot deadlock.
//
//   reduce-scatter, s = 0..n-2: send chunk (r-s) right, receive chunk (r-1-s) from the left
//     and add it into our own. After n-1 steps rank r holds the sum of chunk r+1: scale it
//     by 1/n once, as chapter 4 does.
//   all-gather, t = 0..n-2: send chunk (r+1-t) right, receive chunk (r-t), already a mean,
//     straight into place.
// The two halves are functions of their own: chapter 11's ZeRO ranks call them apart,
// with the update between them, as chapter 8's towers do, reduce-scatter one bucket of
// the gradients at a time and all-gather one layer of the parameters (ZeRO-3): only the
// part of each chunk inside the bucket moves.
//
// Same chunks (ring_chunk), same adds in the same order (host::axpy), same scale
// (host::scal): the bits are chapter 4's. Each rank sends 2(n-1) messages of count/n floats.
// With Reduction::kSum the owned chunk is not scaled (chapter 11's tensor ranks add their
// partial products, as chapter 10's in-process ring does); the bytes this rank sent are
// returned, counted where they are sent (chapter 11's wire per mesh dimension).
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "kernels/host/blas.hpp"
#include "mpi/mpi_check.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/allreduce_mpi.hpp"

namespace towers {
namespace {

int wrap(int index, int n) { return ((index % n) + n) % n; }

}  // namespace

// docs-begin: ring-sendrecv
std::uint64_t ring_reduce_scatter_sendrecv(float* data, std::size_t count, float* receive,
                                           MPI_Comm comm, Reduction reduction, Chunk bucket) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument("ring_reduce_scatter_sendrecv: more than INT_MAX floats in one message");
  }
  if (bucket.offset + bucket.size > count) {
    throw std::invalid_argument("ring_reduce_scatter_sendrecv: the bucket lies outside the buffer");
  }
  int n = 1, r = 0;
  MPI_CHECK(MPI_Comm_size(comm, &n));
  MPI_CHECK(MPI_Comm_rank(comm, &r));
  if (n == 1 || bucket.size == 0) return 0;  // the mean of one buffer, or of nothing, is itself
  std::uint64_t sent = 0;
  const int left = wrap(r - 1, n), right = wrap(r + 1, n);
  auto size = [](const Chunk& c) { return static_cast<int>(c.size); };
  // Only the part of each chunk inside the bucket moves; `data` holds the bucket's elements
  // from data[0] on, so element e of the buffer is data[e - bucket.offset].
  auto at = [&](const Chunk& c) { return c.size > 0 ? data + (c.offset - bucket.offset) : data; };

  for (int s = 0; s < n - 1; ++s) {
    const Chunk out = overlap(ring_chunk(count, n, wrap(r - s, n)), bucket);
    const Chunk in = overlap(ring_chunk(count, n, wrap(r - 1 - s, n)), bucket);
    MPI_CHECK(MPI_Sendrecv(at(out), size(out), MPI_FLOAT, right, s,  //
                           receive, size(in), MPI_FLOAT, left, s, comm, MPI_STATUS_IGNORE));
    sent += out.size * sizeof(float);
    if (in.size > 0) host::axpy(size(in), 1.0f, receive, at(in));
  }
  // Now the sum over all ranks of the chunk this rank owns.
  const Chunk owned = overlap(ring_chunk(count, n, wrap(r + 1, n)), bucket);
  if (owned.size > 0 && reduction == Reduction::kMean) {
    host::scal(size(owned), 1.0f / static_cast<float>(n), at(owned));
  }
  return sent;
}

std::uint64_t ring_all_gather_sendrecv(float* data, std::size_t count, MPI_Comm comm, Chunk bucket) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument("ring_all_gather_sendrecv: more than INT_MAX floats in one message");
  }
  if (bucket.offset + bucket.size > count) {
    throw std::invalid_argument("ring_all_gather_sendrecv: the bucket lies outside the buffer");
  }
  int n = 1, r = 0;
  MPI_CHECK(MPI_Comm_size(comm, &n));
  MPI_CHECK(MPI_Comm_rank(comm, &r));
  if (n == 1 || bucket.size == 0) return 0;
  std::uint64_t sent = 0;
  const int left = wrap(r - 1, n), right = wrap(r + 1, n);
  auto size = [](const Chunk& c) { return static_cast<int>(c.size); };
  auto at = [&](const Chunk& c) { return c.size > 0 ? data + (c.offset - bucket.offset) : data; };
  for (int t = 0; t < n - 1; ++t) {  // tags after the reduce-scatter's 0..n-2
    const Chunk out = overlap(ring_chunk(count, n, wrap(r + 1 - t, n)), bucket);
    const Chunk in = overlap(ring_chunk(count, n, wrap(r - t, n)), bucket);
    MPI_CHECK(MPI_Sendrecv(at(out), size(out), MPI_FLOAT, right, n + t,  //
                           at(in), size(in), MPI_FLOAT, left, n + t, comm, MPI_STATUS_IGNORE));
    sent += out.size * sizeof(float);
  }
  return sent;
}

std::uint64_t ring_average_sendrecv(float* data, std::size_t count, float* receive, MPI_Comm comm,
                                    Reduction reduction) {
  // The two halves, one after the other (chapter 8 puts the update between them).
  const std::uint64_t sent =
      ring_reduce_scatter_sendrecv(data, count, receive, comm, reduction, Chunk{0, count});
  return sent + ring_all_gather_sendrecv(data, count, comm, Chunk{0, count});
}
// docs-end: ring-sendrecv

}  // namespace towers
