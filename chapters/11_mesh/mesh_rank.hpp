// SPDX-License-Identifier: MIT
// MeshRank: one rank of chapter 11's composed run, what the run's loop asks of it. Four
// kinds (mesh_run.cpp, stage_rank.cpp, sharded_rank.cpp): chapter 5's rank (tp = 1,
// pp = 1), chapter 8's (the same with --zero or an optimizer that keeps state), chapter
// 10's tensor rank (tp > 1, pp = 1) and chapter 9's pipeline stage (pp > 1; with tp > 1
// its variables a tensor slice, and chapter 10's split on the stage holding local3).
// Each is made from a whole model::TrainingState (fresh, or a checkpoint's) and takes its
// part of it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/cifar10.hpp"
#include "model/checkpoint.hpp"
#include "mpi/mesh_ranks.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/mesh_plan.hpp"
#include "parallel/tower.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// One rank of the mesh.
class MeshRank {
 public:
  virtual ~MeshRank() = default;
  /// Enqueues step `step` (global step `global_step`) on the rank's stream.
  virtual void enqueue(int step, std::int64_t global_step) = 0;
  /// After the step's synchronize: the loss the chapter this rank runs would log for its
  /// replica (may be a collective over the rank's tensor communicator).
  virtual float loss() = 0;
  /// A collective (every rank calls it): puts every rank's part together in chapter 1's
  /// flat layout in `whole` on world rank 0. What it guarantees there: `params`, always
  /// (model::kNumParameters floats; --save-params reads them); `moving_averages` and
  /// `optimizer_state` (--optimizer's own floats for every parameter, empty for SGD) only
  /// on the meshes mesh_checkpoint_problem lists. Elsewhere they are not put together:
  /// ZeRO-1 beside --tp or --pp and ZeRO-2 beside --tp give the parameters alone (their
  /// averages and optimizer state are shards), and a stage beside --tp puts no optimizer
  /// state together. On the
  /// other ranks `whole` may be written or left as it was, and means nothing; its
  /// global_step, input and optimizer are left as they are on every rank. The way back is
  /// the constructor's: each kind takes its part of a whole state (its copy, slice, range
  /// or shard, of the optimizer's state too where it is listed, and its input at the
  /// state's position) when it is made (mesh_checkpoint.hpp).
  virtual void put_together(model::TrainingState& whole) = 0;
  /// Bytes this rank sent on each dimension so far (kMeshDimensions' order).
  virtual std::uint64_t bytes_sent(int dimension) const = 0;
  /// The stream the rank's step runs on: the loop waits for it after each step.
  virtual Stream& stream() = 0;
};

/// Chapter 9's stage `mesh.at().pipeline` of `config` (pp > 1) on this process's
/// device: its range of the variables, its activation slots, its mailboxes, the
/// activations and gradients sent to its neighbours over the pipeline communicator, and
/// with dp > 1 its range's gradients averaged over the data communicator (--zero 1: its
/// shard of the range updated between the data ring's halves, zero_one_update.hpp). With
/// tp > 1 it keeps its variables in chapter 10's slice for its tensor index, and the stage
/// that holds local3 and local4 runs chapter 10's split of them over the tensor
/// communicator (stage_rank.cpp). It takes its part of `state`, and its input starts at
/// `state.input` when there is one.
std::unique_ptr<MeshRank> make_stage_rank(const MeshRanks& mesh, Watchdog& watchdog,
                                          Runtime& runtime, const data::Dataset& train, const MeshConfig& config,
                                          const model::TrainingState& state, std::uint64_t seed);

/// A tensor group's slices of one array laid out as the parameters, put together in
/// chapter 1's flat layout: `mine` is this rank's slice (TensorSliceLayout(tp, t).size()
/// floats, on the host). Returns model::kNumParameters floats on the group's rank 0 (each
/// rank's columns and rows, the replicated variables from rank 0), nothing on the others.
/// A collective over the tensor communicator (mesh_run.cpp).
std::vector<float> gather_tensor_slices(const MeshRanks& mesh, const std::vector<float>& mine);

/// Chapter 8's rank for the one tower of `set` (tp = 1, pp = 1; sharded_rank.cpp):
/// ShardedVariables at `config.zero` with `config.optimizer`, its collectives over the
/// data communicator.
std::unique_ptr<MeshRank> make_sharded_rank(const MeshRanks& mesh, Watchdog& watchdog, TowerSet& set,
                                            const data::Dataset& train, const MeshConfig& config,
                                            const model::TrainingState& state, std::uint64_t seed);

}  // namespace towers
