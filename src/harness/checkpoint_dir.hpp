// SPDX-License-Identifier: MIT
// CheckpointDir: --checkpoint-dir, --resume, --resume-if-present and --overwrite, settled
// before the first step so that no run can lose or mix up checkpoints.
//
// At construction (before training) it
//   - creates the folder with its parents, or refuses with a message naming the flag;
//   - locks it for the whole run (cli/folder_lock.hpp): a second run given the same
//     folder refuses, naming the first's PID, instead of interleaving checkpoints;
//   - removes temporary files of saves whose process died (model.ckpt-N.tmp-PID);
//   - with --resume: finds the newest checkpoint, the one with the highest step, and
//     refuses when there is none (missing, empty or mistyped folder) unless
//     --resume-if-present was given, which then starts from scratch; refuses one written
//     with another optimizer than this run's (its state would be another rule's, or none);
//   - without --resume: refuses a folder that already holds checkpoints, because a fresh
//     run would overwrite same-step files and leave older ones that --resume would mix
//     up with the new run; --overwrite deletes them (saying so) and starts afresh.
// So within one folder the checkpoint with the highest step is always the newest save.
//   - last, refuses a folder whose disk cannot hold one more checkpoint (statvfs), naming
//     the bytes needed and free, before the training the checkpoints are meant to keep.
// save() refuses non-finite values (a diverged model) and writes atomically: a save that
// fails (a disk filled during the run) leaves every earlier checkpoint as it was.
// Used from one host thread. Introduced in chapter 1.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cli/folder_lock.hpp"
#include "harness/input_queue.hpp"
#include "model/checkpoint.hpp"

namespace towers {

/// The checkpoint flags of a training program.
struct CheckpointFlags {
  std::string dir;                 ///< --checkpoint-dir; empty: no checkpoints
  bool resume = false;             ///< --resume: continue from the newest checkpoint
  bool resume_if_present = false;  ///< --resume-if-present: resume, or start if there is none
  bool overwrite = false;          ///< --overwrite: a fresh run deletes existing checkpoints
  std::int64_t every = 1000;       ///< --checkpoint-every: save when global_step % every == 0
  bool every_given = false;        ///< --checkpoint-every was on the command line
  /// This run's update rule: chapter 8's --optimizer, SGD in every other program. The
  /// checkpoints hold its state, and --resume refuses a checkpoint of another rule.
  model::Optimizer optimizer = model::Optimizer::kSgd;
};

/// Adds --checkpoint-dir, --checkpoint-every, --resume, --resume-if-present and --overwrite.
void add_checkpoint_flags(CLI::App& app, CheckpointFlags& flags);

/// The checkpoint folder of one run, settled before its first step. Introduced in chapter 1.
class CheckpointDir {
 public:
  /// Settles and locks the folder as described above; throws UsageError naming the flag.
  explicit CheckpointDir(const CheckpointFlags& flags);
  /// Releases the folder's lock.
  ~CheckpointDir();

  /// True when --checkpoint-dir was given.
  bool enabled() const { return !dir_.empty(); }
  /// True when a checkpoint is due after `global_step` steps: every --checkpoint-every
  /// steps of global_step (so a resumed run keeps the same cadence), and at the `last` step.
  bool due(std::int64_t global_step, bool last) const {
    return enabled() && (global_step % every_ == 0 || last);
  }
  /// The checkpoint to resume from, already loaded and checked (its step matches its
  /// name), or nullopt for a fresh start.
  const std::optional<model::TrainingState>& resumed() const { return resumed_; }
  /// The file resumed() was read from (empty when none).
  const std::filesystem::path& resumed_from() const { return resumed_from_; }
  /// Saves `state` as dir/model.ckpt-STEP (atomic; refuses non-finite values); returns the path.
  std::filesystem::path save(const model::TrainingState& state) const;

 private:
  /// With --resume: loads the newest checkpoint (or none, --resume-if-present); without:
  /// refuses a folder holding checkpoints, or with --overwrite deletes them.
  void find_or_clear(const CheckpointFlags& flags);
  /// Refuses (UsageError, before the run) a resumed checkpoint of another optimizer.
  void require_same_optimizer(model::Optimizer optimizer) const;

  std::filesystem::path dir_;
  std::unique_ptr<FolderLock> lock_;  // held from the folder's checks to the end of the run
  std::int64_t every_ = 1000;
  std::optional<model::TrainingState> resumed_;
  std::filesystem::path resumed_from_;
};

/// The note a resume prints when `state` (read from `file`) has no input position, saying
/// why and what restarts: a --save-params file (parameters only: the moving averages start
/// again from them and the input from epoch 0) or a format 1 checkpoint (the input starts
/// again at epoch 0).
std::string missing_input_note(const model::TrainingState& state, const std::string& file);


}  // namespace towers
