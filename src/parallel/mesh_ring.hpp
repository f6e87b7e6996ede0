// SPDX-License-Identifier: MIT
// MeshRing: chapter 5's ring over MPI_Sendrecv on one communicator of chapter 11's mesh,
// as an AllReduce on this process's one tower.
//
// A composed run joins its ranks over two dimensions at once: the tensor ranks of a
// replica add their partial products (chapter 10's g and f, Reduction::kSum) and the
// replicas average their gradients (chapter 5's all-reduce, Reduction::kMean). Both are
// the ring, over the dimension's own communicator (mpi/mesh_ranks.hpp), so the bytes on
// each dimension are the ring's, 2(n-1) x count floats over its n ranks, and the bits the
// in-process ring's (chapters 4 and 10). The ring runs as the tower's stream work (as
// chapter 5's does), under the watchdog, after the work already enqueued; its receive
// buffer, the largest chunk, is in the device's memory ledger (communication), where the
// plan counts it; and the bytes it sends are counted where they are sent. Host backend:
// this MPI reads host memory. Used from the training thread. Introduced in chapter 11.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "mpi/watchdog.hpp"
#include "parallel/allreduce.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// The ring over one mesh communicator, for one tower per process.
class MeshRing final : public AllReduce {
 public:
  /// Joins the ranks of `comm` (errors returned) for up to `max_count` floats, with
  /// `reduction`; allocates the receive buffer on `device` (ring_chunk(max_count, ranks,
  /// 0) floats, MemoryCategory::kCommunication). `what` names it in the trace and in the
  /// watchdog's message ("tensor ring").
  MeshRing(Device& device, MPI_Comm comm, std::size_t max_count, Reduction reduction,
           Watchdog& watchdog, std::string what);

  /// Enqueues the ring on streams[0] over buffers[0][0..count): one tower, this process's.
  /// Throws std::invalid_argument for another number of towers or a count above max_count.
  void average(std::span<float* const> buffers, std::size_t count,
               std::span<Stream* const> streams) override;
  std::string_view name() const override { return "ring"; }

  /// The step the next average() belongs to, for the watchdog's message.
  void set_step(int step) { step_ = step; }
  /// Bytes this rank has sent so far (read after the streams have finished).
  std::uint64_t bytes_sent() const { return sent_.load(); }

 private:
  MPI_Comm comm_;
  std::size_t max_count_;
  Reduction reduction_;
  Watchdog& watchdog_;
  std::string what_;
  Buffer receive_;
  int step_ = 0;
  std::atomic<std::uint64_t> sent_{0};
};

}  // namespace towers
