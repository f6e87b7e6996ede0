// SPDX-License-Identifier: MIT
// Checkpoints: the training state saved to disk and restored.
//
// File layout: a versioned header (magic "TOWERSCK", format version, global_step,
// parameter count and the shape of every variable), then the parameters and the moving
// averages as little-endian float32, then a checksum of everything before it. Saving
// writes a temporary file in the same folder and renames it over `model.ckpt-<step>`, so
// a crash never leaves a half-written checkpoint and the previous one stays intact.
// Loading refuses (UsageError, with the reason and the file) a wrong magic, version,
// shape or checksum. Introduced in chapter 1.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
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

/// Reads and validates a checkpoint file; throws UsageError naming the file and problem.
TrainingState load_checkpoint(const std::filesystem::path& file);

/// The checkpoint with the highest step in `dir` (files named exactly model.ckpt-STEP;
/// temporary files of an interrupted save are ignored), or nullopt when there is none
/// or `dir` does not exist. Does not open the files.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir);

}  // namespace towers::model
