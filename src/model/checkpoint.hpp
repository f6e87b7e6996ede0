// SPDX-License-Identifier: MIT
// Checkpoints: the training state saved to disk and restored.
//
// File layout: a versioned header (magic "TOWERSCK", format version, global_step,
// parameter count and the shape of every variable), then the parameters and the moving
// averages as little-endian float32, then a checksum of everything before it. Saving
// writes a temporary file in the same folder, fsyncs it, renames it over
// `model.ckpt-<step>` and fsyncs the folder, so a crash never leaves a half-written
// checkpoint and no other file is touched. A state with a negative step or a non-finite
// value is never saved. Loading refuses (UsageError, with the reason and the file) a wrong
// magic, version, shape or checksum, a negative step and non-finite values.
// Introduced in chapter 1.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace towers::model {

/// What a checkpoint holds.
struct TrainingState {
  std::int64_t global_step = 0;        ///< steps taken; names the file model.ckpt-STEP
  std::vector<float> params;           ///< [kNumParameters]
  std::vector<float> moving_averages;  ///< [kNumParameters]
};

/// Writes `state` to dir/model.ckpt-STEP, STEP being its global_step, atomically, and
/// returns the path.
/// Throws UsageError, naming the file and the reason, when `dir` is missing or not
/// writable or the state does not hold kNumParameters values twice; an existing file of
/// that name, and every other checkpoint, is then left as it was.
std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const TrainingState& state);

/// Writes `state` to exactly `file` (a temporary "<file>.tmp-PID" in its folder, fsync,
/// rename, fsync of the folder) with the same checks as save_checkpoint(). Used by
/// --save-params; touches no file but `file` and its own temporary.
std::filesystem::path save_checkpoint_file(const std::filesystem::path& file,
                                           const TrainingState& state);

/// Writes `bytes` to `file` atomically and durably, as save_checkpoint_file() does;
/// throws UsageError naming the file, the failed step and the system's reason.
void write_file_atomically(const std::filesystem::path& file, const std::string& bytes);

/// "model.ckpt-STEP", the name save_checkpoint() gives the state of `global_step`.
std::string checkpoint_name(std::int64_t global_step);

/// Reads and validates a checkpoint file; throws UsageError naming the file and problem.
TrainingState load_checkpoint(const std::filesystem::path& file);

/// The newest checkpoint in `dir`: the one with the highest step in its name (files
/// named exactly model.ckpt-STEP, STEP without leading zeros; temporary files of an
/// interrupted save are ignored), or nullopt when there is none or `dir` does not exist.
/// The highest step is the newest save because a fresh run never writes into a folder
/// that holds checkpoints (see CheckpointDir). Does not open the files.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir);

/// Removes "model.ckpt-N.tmp-PID" files in `dir` left by saves whose process is gone;
/// returns what it removed. Files of living processes are left alone.
std::vector<std::filesystem::path> remove_stale_temporary_files(const std::filesystem::path& dir);

}  // namespace towers::model
