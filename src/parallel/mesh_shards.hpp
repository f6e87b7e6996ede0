// SPDX-License-Identifier: MIT
// MeshShards: chapter 8's two halves of the ring (ShardedCollectives) over the data
// communicator of chapter 11's mesh, for the one tower of this process.
//
// Chapter 8's towers shared a process: tower r's shard was a range of every tower's
// buffer, and the ring's copies read the neighbour's memory. In a composed run each data
// rank is a process of its own, so the same halves are chapter 5's ring over
// MPI_Sendrecv (ring_reduce_scatter_sendrecv, ring_all_gather_sendrecv) on the data
// communicator: rank r owns chunk r+1 of ring_chunk, as chapter 8's tower r does, and the
// adds run in the same order, so ZeRO-1 and -2 end with chapter 8's bits. The halves run
// as the tower's stream work under the watchdog (as MeshRing's all-reduce); the receive
// buffer, the largest chunk, is in the device's ledger (communication), where chapter 8's
// in-process ring has it and the plan counts it; the bytes this rank sends are counted
// where they are sent. Host backend: this MPI reads host memory. Used from the training
// thread.
//
// MeshLayerGather: ZeRO-3's layer gathers between the data ranks. Chapter 8's LayerGather
// let each tower pull the pieces of a layer from the other towers' shards; here each rank
// holds only its own shard, so every rank gathers every layer together with the others,
// the ring's all-gather of that layer alone (ring_all_gather_sendrecv with the layer as
// its bucket), into the same two-ended window of LayerGather::window_elements() floats.
// The gather runs on the tower's compute stream just before the layer's first op, as
// chapter 8's --gather-prefetch off: nothing computes beside it. The bytes are the
// all-gather's, (N-1) pieces of each layer per rank, as chapter 8 counts them.
// Introduced in chapter 11.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "mpi/watchdog.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/layer_gather.hpp"
#include "parallel/tower.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// Rank `rank` of `ranks`' shard of `count` variables: the chunk the ring's reduce-scatter
/// leaves it (ring_chunk's chunk rank + 1). MeshShards::shard is this rank's; a gather of
/// every rank's shard (ZeroOneUpdate's checkpoint) needs them all.
Chunk mesh_shard(std::size_t count, int ranks, int rank);

/// Reduce-scatter and all-gather over one mesh communicator, one tower per process: the
/// tower is this process's, index 0 (its shard is its rank's).
class MeshShards final : public ShardedCollectives {
 public:
  /// Joins the ranks of `comm` (errors returned) for buffers of up to `max_count` floats
  /// (the mean: chapter 8's gradients); allocates the receive buffer on `device`
  /// (ring_chunk(max_count, ranks, 0) floats, MemoryCategory::kCommunication). `what` names
  /// it in the trace and in the watchdog's message ("data shards").
  MeshShards(Device& device, MPI_Comm comm, std::size_t max_count, Watchdog& watchdog,
             std::string what);

  /// This rank's range of a `count`-element buffer: ring_chunk(count, ranks, rank + 1).
  /// `tower` must be 0 (one tower per process): std::invalid_argument otherwise.
  Chunk shard(std::size_t count, int tower) const override;
  void reduce_scatter(std::span<float* const> buffers, std::size_t count,
                      std::span<Stream* const> streams) override;
  void reduce_scatter_bucket(std::span<float* const> buckets, std::size_t count, Chunk bucket,
                             std::span<Stream* const> streams) override;
  void all_gather(std::span<float* const> buffers, std::size_t count,
                  std::span<Stream* const> streams) override;
  std::string_view name() const override { return "ring"; }

  /// The step the next calls belong to, for the watchdog's message.
  void set_step(int step) { step_ = step; }
  /// Bytes this rank has sent so far (read after the stream has finished).
  std::uint64_t bytes_sent() const { return sent_.load(); }

 private:
  // Checks one tower and a count within max_count; returns the tower's buffer.
  float* one_tower(std::span<float* const> buffers, std::size_t count,
                   std::span<Stream* const> streams) const;
  // Enqueues `work` (the MPI calls, returning the bytes sent) on `stream`.
  template <typename Work>
  void enqueue(Stream& stream, const std::string& what, Work work);

  MPI_Comm comm_;
  int ranks_ = 1, rank_ = 0;
  std::size_t max_count_;
  Watchdog& watchdog_;
  std::string what_;
  Buffer receive_;
  int step_ = 0;
  std::atomic<std::uint64_t> sent_{0};
};

/// ZeRO-3's layer gathers over one mesh communicator, for the one tower of this process.
class MeshLayerGather final : public LayerSource {
 public:
  /// `tower` holds `shard`, the range `owned` of the flat parameters (the reduce-scatter's
  /// shard of its rank: MeshShards::shard). Allocates the window (window_elements() floats,
  /// MemoryCategory::kParameters, as chapter 8's LayerGather). `what` names the gathers in
  /// the trace and the watchdog's message.
  MeshLayerGather(Tower& tower, const float* shard, Chunk owned, MPI_Comm comm, Watchdog& watchdog,
                  std::string what);

  /// The hooks of this process's tower (`tower` must be 0): acquire(k) enqueues layer k's
  /// gather on the compute stream and returns where it lands; release(k) moves on.
  /// Throws std::logic_error when a pass asks for another layer than
  /// LayerGather::schedule() says.
  model::Network::LayerParams hooks(int tower) override;

  /// The step the next gathers belong to, for the watchdog's message.
  void set_step(int step) { step_ = step; }
  /// Bytes this rank has sent so far (read after the stream has finished).
  std::uint64_t bytes_sent() const { return sent_.load(); }

 private:
  const float* acquire(int layer);
  void release(int layer);

  Tower& tower_;
  const float* shard_;
  Chunk owned_;
  MPI_Comm comm_;
  Watchdog& watchdog_;
  std::string what_;
  Buffer window_;
  std::size_t next_use_ = 0;  // position in LayerGather::schedule() of the next acquire
  int step_ = 0;
  std::atomic<std::uint64_t> sent_{0};
};

}  // namespace towers
