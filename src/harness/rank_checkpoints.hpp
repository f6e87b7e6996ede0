// SPDX-License-Identifier: MIT
// RankCheckpoints: chapter 1's --checkpoint-dir, --checkpoint-every, --resume,
// --resume-if-present, --overwrite and --eval for a job of ranks, written once for the
// programs started by mpirun (05_ranks, 06_overlap_ranks and chapter 11's mesh).
//
// Rank 0 alone owns the folder (mpi/rank_state.hpp says why). Before step 0 it settles
// the folder and, with --eval, reads the test set, so that a refusal ends every rank with
// rank 0's one message; the state it resumes from is then every rank's. At a due step
// every rank gathers its input position to rank 0 (a collective), and rank 0 writes the
// checkpoint; a save that fails ends the job at once, since the other ranks must not wait
// for rank 0. The evaluation itself is TowerTraining's (its moving averages after the
// last step): evaluate_here() says which rank sets TrainingFlags::eval.
// Used from one host thread of every rank; the constructor and save()
// are collectives or follow one, so every rank calls them in the same order.
// Introduced in chapter 5.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "data/input_position.hpp"
#include "harness/checkpoint_dir.hpp"
#include "harness/tower_training.hpp"
#include "parallel/placement.hpp"
#include "model/checkpoint.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/tower.hpp"

namespace towers {

/// The checkpoint and evaluation flags of a program of ranks.
struct RankCheckpointFlags {
  CheckpointFlags checkpoints;  ///< --checkpoint-dir and friends, as chapter 1's
  bool eval = false;            ///< --eval: rank 0 evaluates the moving averages at the end
};

/// Adds --checkpoint-dir, --checkpoint-every, --resume, --resume-if-present, --overwrite
/// and --eval, with chapter 1's texts.
void add_rank_checkpoint_flags(CLI::App& app, RankCheckpointFlags& flags);

/// The checkpoints of a job of ranks, settled by rank 0 before step 0 (see above).
/// Introduced in chapter 5.
class RankCheckpoints {
 public:
  /// A collective, before the run's TowerTraining is made: rank 0 settles and locks the
  /// folder (CheckpointDir) and with --eval reads the test set from `data_dir`; then every
  /// rank gets the state to resume from. Throws UsageError with rank 0's message on every
  /// rank when rank 0 refused.
  RankCheckpoints(const MpiJob& job, const RankCheckpointFlags& flags, const std::string& data_dir);
  /// Releases rank 0's lock on the folder.
  ~RankCheckpoints();

  /// Whether this rank evaluates with --eval (rank 0: one line and one summary key for
  /// the job; the ranks' moving averages are equal). Set TrainingFlags::eval from it.
  bool evaluate_here() const { return eval_ && job_.rank() == 0; }
  /// Has `training` start from the checkpoint rank 0 resumed, on every rank alike (its
  /// variables and its input; nothing for a fresh start). Call before training.start().
  void resume(TowerTraining& training) const;
  /// The state rank 0 resumed, on every rank alike (nullopt: a fresh start), for a program
  /// that makes its own ranks' variables from it (chapter 11's mesh).
  const std::optional<model::TrainingState>& resumed() const { return resumed_; }
  /// The file resumed() was read from, on rank 0 ("" elsewhere and on a fresh start).
  std::string resumed_from() const { return dir_ ? dir_->resumed_from().string() : ""; }

  /// True when a checkpoint is due after `steps_taken` global steps (CheckpointDir::due's
  /// rule), on every rank: every rank takes part in a save.
  bool due(std::int64_t steps_taken, bool last) const {
    return enabled_ && (steps_taken % every_ == 0 || last);
  }
  /// A collective at a due step: gathers the ranks' input positions (`mine`, each rank's
  /// iterator's) under `watchdog` as the collective of `run_step`, and rank 0 writes
  /// model.ckpt-`steps_taken` of its `variables` (save_state: the one save), with the
  /// state of the flags' optimizer (CheckpointFlags::optimizer: SGD's none but in chapter
  /// 11's mesh). A save that fails aborts the job with the reason.
  void save(std::int64_t steps_taken, const data::InputPosition& mine, Watchdog& watchdog,
            int run_step, Placement& variables) const;

 private:
  const MpiJob& job_;
  std::unique_ptr<CheckpointDir> dir_;  // rank 0's; null elsewhere
  bool enabled_ = false;
  bool eval_ = false;
  std::int64_t every_ = 1000;
  model::Optimizer optimizer_ = model::Optimizer::kSgd;  // whose state a save holds
  std::optional<model::TrainingState> resumed_;
};

}  // namespace towers
