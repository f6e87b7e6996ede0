// SPDX-License-Identifier: MIT
// ZeroOneUpdate: ZeRO-1 on the data dimension for the variables one rank of the mesh
// updates, a tensor rank's slice (mesh_run.cpp) or a pipeline stage's range
// (stage_rank.cpp), called at the rank's update point.
//
// At ZeRO-0 those ranks average their variables' gradients over the data communicator
// (MeshRing: the ring's reduce-scatter, then its all-gather) and every replica updates all
// of them. ZeRO-1 puts the update between the ring's two halves, as chapter 8 does for the
// whole model: the reduce-scatter leaves this rank the mean of its shard of the variables
// (ring_chunk(count, dp, rank + 1), MeshShards), --optimizer's rule and the moving
// averages run on that shard alone, their state kept for it alone (the ledger's optimizer
// state, (1 + own) x ceil(count / dp) floats on the largest shard), and the all-gather
// hands every replica every updated shard. The chunks are the ones MeshRing's all-reduce
// cuts and every rule is element-wise, so the parameters are ZeRO-0's bits
// (chapter11_run_test); the bytes on the wire are the all-reduce's, 2(dp-1) x count floats
// over the replicas. With one replica there is no ring: the shard is every variable.
//
// ZeRO-2 beside tensor parallelism (a tensor rank's slice, mesh_run.cpp) is the same
// update with one buffer more: the reduce-scatter's mean of this rank's shard is copied
// into a gradient shard of its own (MemoryCategory::kGradients, ceil(count / dp) floats
// on the largest shard) and the update reads it there, so the bits are ZeRO-1's. What
// the step keeps of its gradients is that shard; the slice's whole gradient buffer, which
// chapter 10's backward writes layer by layer at their places in the slice, is scratch
// after the reduce-scatter, kept allocated for the next step's backward as chapter 8
// keeps its buckets and ZeRO-3's whole buffer (zero_gradients.hpp). The ledger's peak is
// then count + ceil(count / dp): more than ZeRO-1's count, honestly so (the plan says why,
// mesh_plan.hpp). Chapter 8 saves memory at its peak only where its buckets are small
// beside the model; chapter 10's backward has no buckets.
// Host backend, as MeshShards. Used from the training thread. Introduced in chapter 11.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/optimizer_kind.hpp"
#include "model/optimizer_state.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/allreduce.hpp"  // Chunk
#include "parallel/mesh_shards.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// ZeRO-1 over the data communicator for `count` variables this rank updates.
class ZeroOneUpdate {
 public:
  /// Joins the ranks of `data` (the replicas of this rank's slice or stage; errors
  /// returned) for `count` variables, whose moving averages start at `averages` (host,
  /// `count` floats laid out as the variables). Allocates on `device` this rank's shard of
  /// the moving averages and --optimizer's own state for it (MemoryCategory::
  /// kOptimizerState), and with more than one replica the ring's receive buffer
  /// (MeshShards: communication). With `keep_gradient_shard` (ZeRO-2) also this rank's
  /// shard of the gradients (kGradients). Copies through `stream`, and waits.
  ZeroOneUpdate(Device& device, Stream& stream, MPI_Comm data, std::size_t count,
                model::Optimizer optimizer, const float* averages, Watchdog& watchdog,
                bool keep_gradient_shard = false);

  /// Enqueues on the stream step `step`'s (global step `global_step`) update of the
  /// `count` variables at `params` from the replica's gradients at `grads` (both on the
  /// device, laid out alike): the mean of this rank's shard over the replicas, the update
  /// and moving averages of the shard at `learning_rate` and `decay`, every replica's
  /// shard of the parameters gathered. Afterwards `params` is every replica's, `grads`
  /// scratch (ZeRO-2: the mean of the shard is kept in the gradient shard, and the update
  /// reads it there).
  void update(int step, std::int64_t global_step, float learning_rate, float decay,
              float* grads, float* params);

  /// A resumed run's --optimizer state for the `count` variables: `whole` holds the
  /// optimizer's parts, `whole_count` floats apart, each laid out as the variables from
  /// `offset` on (for a stage's range of TrainingState::optimizer_state: kNumParameters and
  /// the range's offset). This rank takes its shard of each part. Waits for the copy.
  void restore_optimizer(const float* whole, std::size_t whole_count, std::size_t offset);

  /// The replicas' shards put together on rank 0 of the data communicator, laid out as the
  /// `count` variables: `averages` (count floats) and `optimizer_state` (--optimizer's parts
  /// one after another, count floats each). On the other ranks both are as large and hold
  /// this rank's shard alone (the caller's next collective wants equal sizes everywhere).
  /// A collective over the data communicator, between steps (MeshRank::put_together).
  void put_together(std::vector<float>& averages, std::vector<float>& optimizer_state);

  /// The variables this rank updates (and keeps the state of), of the `count`.
  Chunk shard() const { return shard_; }
  /// Bytes this rank has sent so far on the data dimension (read after the stream has
  /// finished).
  std::uint64_t bytes_sent() const { return halves_ ? halves_->bytes_sent() : 0; }

 private:
  // One array of `count_` floats holding this rank's shard at its place: every replica's
  // shard into it on rank 0 of the data communicator.
  void gather_shards(float* array) const;

  Stream& stream_;
  MPI_Comm data_;
  std::size_t count_;
  std::unique_ptr<MeshShards> halves_;  // null with one replica
  Chunk shard_;
  model::OptimizerState optimizer_;
  Buffer averages_;  // the shard's moving averages
  Buffer gradient_shard_;  // ZeRO-2: the mean of the shard's gradients; empty at ZeRO-1
};

}  // namespace towers
