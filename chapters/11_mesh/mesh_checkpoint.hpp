// SPDX-License-Identifier: MIT
// MeshCheckpoints: chapter 5's --checkpoint-dir, --checkpoint-every, --resume,
// --resume-if-present and --overwrite for chapter 11's composed run, with chapter 1's file.
//
// A checkpoint of the mesh is chapter 1's file (model/checkpoint.hpp), the one format of
// the project: the whole training state in chapter 1's flat layout — the parameters, the
// moving averages and --optimizer's own state (momentum's velocity, Adam's two moments;
// none for SGD, whose file is format 2, the others' format 3) — put together on world
// rank 0 from every rank's part (a replica's copy, a tensor rank's slice, a stage's range
// or, beside --tp, its range of a slice, a ZeRO rank's shard: MeshRank::put_together), with
// the global step and the input's position. Rank 0 alone owns the folder, as chapter 5's ranks do (RankCheckpoints does
// it for both): it settles the folder before step 0, reads the checkpoint, hands the
// whole state to every rank (MPI_Bcast, the optimizer's state included), and writes
// every save. Every rank takes
// its part of that whole state when it is made, so the file does not remember the mesh
// that wrote it: it resumes any mesh that may keep checkpoints (mesh_checkpoint_problem's
// list, below) and whose replicas read the same images per step (--dp x --batch-size),
// with another --tp, --pp or --zero of that list, and chapter 1 (01_single_gpu --resume,
// SGD's) and chapter 8 (08_sharded --resume, any optimizer) read it too. A resume refuses
// a file written with another --optimizer (CheckpointDir's check, chapter 8's message):
// its state would be another rule's, or none.
//
// The input's position after k global steps is the same on every rank (every rank reads
// its part of one sequence of global batches of dp x batch images: data::position_after),
// so it is computed, not gathered from the ranks that read: a stage in the middle of a
// pipeline reads nothing. A resume checks the checkpoint's position against this mesh on
// every rank before step 0 (a usage error, said once by rank 0, naming the flags to fix).
//
// Which meshes may keep checkpoints is a positive list (mesh_checkpoint_problem): those
// whose every kind of rank puts its part together and takes it back, as
// chapter11_resume_test proves by kill -9 and --resume.
// Used from the training thread of every rank; the constructor and save() are collectives.
// Introduced in chapter 11.
#pragma once

#include <cstdint>
#include <optional>

#include "harness/checkpoint_dir.hpp"
#include "harness/rank_checkpoints.hpp"
#include "mesh_rank.hpp"
#include "model/checkpoint.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/mesh_plan.hpp"

namespace towers {

/// The checkpoints of a mesh (see above).
class MeshCheckpoints {
 public:
  /// A collective, before the ranks are made: rank 0 settles `flags`' folder and reads the
  /// checkpoint to resume (RankCheckpoints), every rank gets it and checks that its input
  /// position fits `config` over a training set of `examples` images and `seed`. Throws
  /// UsageError on every rank (rank 0 says it) when the folder is refused, the checkpoint
  /// was written with another --optimizer than config.optimizer, or by a mesh whose
  /// replicas read another number of images per step.
  MeshCheckpoints(const MpiJob& job, const CheckpointFlags& flags, const MeshConfig& config,
                  std::size_t examples, std::uint64_t seed);

  /// The whole state every rank starts from and takes its part of: the checkpoint's
  /// (parameters, moving averages, optimizer state, global step, input position), or
  /// fresh_state(seed) (no optimizer state: it starts at zero).
  const model::TrainingState& start() const { return start_; }
  /// The global step the run starts at: the checkpoint's, or 0.
  std::int64_t first_step() const { return start_.global_step; }

  /// True when a checkpoint is due after `steps_taken` global steps (chapter 1's rule:
  /// every --checkpoint-every of the global step, and the `last` step), on every rank.
  bool due(std::int64_t steps_taken, bool last) const { return ranks_.due(steps_taken, last); }
  /// A collective at a due step, after the step's wait: every rank puts its part of the
  /// state together on world rank 0 (`rank`), under `watchdog` as a collective of
  /// `run_step`, and rank 0 writes model.ckpt-`steps_taken` with the input's position
  /// after this run's `run_step` + 1 steps. A save that fails aborts the job.
  void save(std::int64_t steps_taken, int run_step, MeshRank& rank, Watchdog& watchdog) const;

 private:
  RankCheckpoints ranks_;
  const MeshConfig& config_;
  std::size_t examples_;
  std::uint64_t seed_;
  model::TrainingState start_;
  std::int64_t first_input_step_ = 0;  // global batches the input had taken at the start
};

}  // namespace towers
