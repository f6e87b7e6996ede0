// SPDX-License-Identifier: MIT
// MeshRank: one rank of chapter 11's composed run, what the run's loop asks of it. Four
// kinds (mesh_run.cpp, stage_rank.cpp, sharded_rank.cpp): chapter 5's rank (tp = 1,
// pp = 1), chapter 8's (the same with --zero or an optimizer that keeps state), chapter
// 10's tensor rank (tp > 1) and chapter 9's pipeline stage (pp > 1, tp = 1).
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
  /// The job's training state in chapter 1's flat layout into `whole` on world rank 0:
  /// params and moving_averages (model::kNumParameters each), put together from every
  /// rank's part (a collective: every rank calls it; `whole` is only written on world rank
  /// 0; its global_step, input and optimizer are left as they are). The way back is the
  /// constructor's: each kind takes its part of a whole state (its copy, slice or range,
  /// and its input at the state's position) when it is made (mesh_checkpoint.hpp).
  virtual void put_together(model::TrainingState& whole) = 0;
  /// Bytes this rank sent on each dimension so far (kMeshDimensions' order).
  virtual std::uint64_t bytes_sent(int dimension) const = 0;
  /// The stream the rank's step runs on: the loop waits for it after each step.
  virtual Stream& stream() = 0;
};

/// Chapter 9's stage `mesh.at().pipeline` of `config` (pp > 1, tp = 1) on this process's
/// device: its range of the variables, its activation slots, its mailboxes, the
/// activations and gradients sent to its neighbours over the pipeline communicator, and
/// with dp > 1 its range's gradients averaged over the data communicator (--zero 1: its
/// shard of the range updated between the data ring's halves, zero_one_update.hpp). It
/// takes its range of `state`, and its input starts at `state.input` when there is one.
std::unique_ptr<MeshRank> make_stage_rank(const MeshRanks& mesh, Watchdog& watchdog,
                                          Runtime& runtime, const data::Dataset& train, const MeshConfig& config,
                                          const model::TrainingState& state, std::uint64_t seed);

/// Chapter 8's rank for the one tower of `set` (tp = 1, pp = 1; sharded_rank.cpp):
/// ShardedVariables at `config.zero` with `config.optimizer`, its collectives over the
/// data communicator.
std::unique_ptr<MeshRank> make_sharded_rank(const MeshRanks& mesh, Watchdog& watchdog, TowerSet& set,
                                            const data::Dataset& train, const MeshConfig& config,
                                            const model::TrainingState& state, std::uint64_t seed);

}  // namespace towers
