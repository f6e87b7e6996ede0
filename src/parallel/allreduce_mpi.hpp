// SPDX-License-Identifier: MIT
// Where ranks meet in chapter 5: the all-reduce between processes.
//
// In chapter 4 one process held every tower and an all-reduce read the other towers'
// buffers directly. Now each process holds one tower and sees only its own gradients;
// the others' arrive as messages. Three implementations, chosen by --allreduce:
//
//   mpi   MPI_Allreduce(MPI_SUM) then a scale by 1/n, on host memory (host backend). MPI
//         picks the algorithm and so the order of the sums (a tree for small messages, a
//         ring or recursive halving for large ones): the mean is right to rounding, but its
//         last bits may differ from the ring's.
//   ring  chapter 4's ring written over MPI_Sendrecv (allreduce_mpi_ring.cpp): the same
//         chunks, the same order of sums, so the same bits as chapter 4's in-process ring.
//   nccl  ncclAllReduce with ncclAvg on the GPU (cuda backend), bootstrapped over MPI.
//
// Contract, for every implementation:
//   - average() only enqueues on the tower's stream and returns; the stream runs the
//     all-reduce after the work already on it (the backward pass), and work enqueued after
//     it (the update) sees the mean. Every rank calls average() once per step, same count.
//   - Every rank ends with the same bits.
//   - A collective that does not finish within the watchdog's limit ends the job (mpi,
//     ring: the watchdog scope around the MPI calls; nccl: wait() polls NCCL's async
//     error and aborts the communicator).
// Used from the training thread. Introduced in chapter 5.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mpi/mpi_job.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/allreduce.hpp"  // Reduction
#include "runtime/runtime.hpp"

namespace towers {

/// Averages one flat float buffer per rank, in place, across the ranks of a job.
class RankAllReduce {
 public:
  /// Frees what the implementation set up (the NCCL communicator). Destroy it only after
  /// the streams it enqueued on have finished.
  virtual ~RankAllReduce();
  /// Enqueues averaging buffer[0..count) across the ranks on `stream` (the tower's), for
  /// global step `step` (named in the watchdog's message); returns at once.
  virtual void average(float* buffer, std::size_t count, Stream& stream, int step) = 0;
  /// Waits until `stream` has finished its work, failing instead of hanging. The default
  /// is stream.synchronize() (the MPI calls run inside the stream's work, under the
  /// watchdog); NCCL polls its asynchronous error while it waits.
  virtual void wait(Stream& stream);
  /// "mpi", "ring" or "nccl", for the summary.
  virtual std::string_view name() const = 0;
};

/// The mean of `count` floats at `data` over the ranks of `comm`, in place: MPI_Allreduce
/// with MPI_SUM, then a scale by 1/ranks. Host memory.
void mpi_average(float* data, std::size_t count, MPI_Comm comm);

/// Chapter 4's ring all-reduce between the ranks of `comm`, over MPI_Sendrecv, in place:
/// reduce-scatter then all-gather, chunks as ring_chunk() cuts them, rank r receiving from
/// rank r-1 and sending to r+1. `receive` holds at least ring_chunk(count, ranks, 0).size
/// floats. Bit-identical to make_ring_allreduce() with one tower per rank (and the same
/// `reduction`: Reduction::kSum leaves the sum, chapter 11's tensor ranks). Returns the
/// bytes this rank sent: over the ranks, 2(n-1) x count floats in all.
std::uint64_t ring_average_sendrecv(float* data, std::size_t count, float* receive, MPI_Comm comm,
                                    Reduction reduction = Reduction::kMean);

/// The first half of ring_average_sendrecv, alone (chapter 11's ZeRO ranks): afterwards
/// this rank's chunk of the `count`-element buffer, ring_chunk(count, ranks, rank + 1),
/// holds the mean (or the sum) over the ranks; the rest of the buffer is scratch. Only the
/// elements in `bucket` take part: `data` holds them from data[0] on (the whole buffer
/// when bucket is {0, count}); each element gets the same adds in the same order as in the
/// whole reduce-scatter, so the buckets of a buffer, one after another, leave its bits.
/// `receive` as ring_average_sendrecv. Returns the bytes this rank sent.
std::uint64_t ring_reduce_scatter_sendrecv(float* data, std::size_t count, float* receive,
                                           MPI_Comm comm, Reduction reduction, Chunk bucket);

/// The second half of ring_average_sendrecv, alone: every rank's chunk
/// ring_chunk(count, ranks, rank + 1) of `data` copied into every other rank's buffer.
/// Only the elements in `bucket` take part, `data` holding them from data[0] on (ZeRO-3
/// gathers one layer: each rank's part of it must be in place first). Returns the bytes
/// this rank sent.
std::uint64_t ring_all_gather_sendrecv(float* data, std::size_t count, MPI_Comm comm, Chunk bucket);

/// Makes the all-reduce `choice` names for this rank, whose tower runs on `device`, for
/// up to `max_count` floats. Throws UsageError, saying what to use instead, for mpi or ring
/// on GPUs (this MPI reads host memory), nccl on the host backend, and nccl when ranks of
/// one machine would share a GPU (NCCL needs one GPU per rank).
std::unique_ptr<RankAllReduce> make_rank_allreduce(Runtime& runtime, Device& device,
                                                   const std::string& choice, const MpiJob& job,
                                                   Watchdog& watchdog, std::size_t max_count);

/// NCCL's all-reduce, one communicator rank per MPI rank: rank 0 makes the unique id
/// (ncclGetUniqueId), MPI_Bcast gives it to every rank, each joins with ncclCommInitRank
/// on its GPU (`device`). Cuda backend only; the build without CUDA throws UsageError.
std::unique_ptr<RankAllReduce> make_nccl_rank_allreduce(Device& device, const MpiJob& job,
                                                        Watchdog& watchdog);

}  // namespace towers
