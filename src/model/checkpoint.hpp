// SPDX-License-Identifier: MIT
// Checkpoints: the training state saved to disk and restored.
//
// File layout: a versioned header (magic "TOWERSCK", format version, global_step,
// parameter count and the shape of every variable; from version 2 also the input's
// position; version 3 also the optimizer), then the parameters and the moving averages as
// little-endian float32 (version 3: then the optimizer's own state, chapter 8's momentum
// velocity or Adam's two moments), then a checksum of everything before it. A state
// without optimizer state (the tutorial's SGD) is written as version 2, byte for byte
// what it was before version 3 existed; versions 1 (no input position) and 2 still load,
// as SGD's. Saving
// writes a temporary file in the same folder, fsyncs it, renames it over
// `model.ckpt-<step>` and fsyncs the folder, so a crash never leaves a half-written
// checkpoint and no other file is touched. A state with a negative step or a non-finite
// value is never saved. Loading refuses (UsageError, with the reason and the file) a wrong
// magic, version, shape or checksum, a negative step, non-finite values and an input
// position outside its data set. No size read from a file is trusted before it is checked
// against the bytes that are left, so a damaged file cannot make the loader allocate more
// than the file holds.
// Introduced in chapter 1.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/input_position.hpp"
#include "model/optimizer_kind.hpp"

namespace towers::model {

/// What a checkpoint holds.
struct TrainingState {
  std::int64_t global_step = 0;        ///< steps taken; names the file model.ckpt-STEP
  std::vector<float> params;           ///< [kNumParameters]
  std::vector<float> moving_averages;  ///< [kNumParameters]
  /// Where the training input stands after global_step steps, so that --resume continues
  /// with the very next batch. Absent in version 1 files and in --save-params files of
  /// programs whose input has no single position (per-tower iterators).
  std::optional<data::InputPosition> input;
  /// The update rule that wrote it (chapter 8's --optimizer): a run resumes only with the
  /// same one, or it would continue with state of another rule or none.
  Optimizer optimizer = Optimizer::kSgd;
  /// The optimizer's own state, whole: [optimizer_own_floats(optimizer) * kNumParameters],
  /// momentum's velocity, or Adam's first moments then its second moments. Empty for SGD.
  std::vector<float> optimizer_state = {};
  /// The format version of the file this state was read from (load_checkpoint), 0 for a
  /// state made in memory. Not written back: save_checkpoint() writes the version the
  /// state's optimizer needs.
  std::uint32_t format_version = 0;
};

/// Whether `state` was read from a file --save-params wrote: a version 2 or later file
/// without an input position (every save --checkpoint-dir makes records one). Such a file
/// holds the parameters only: its moving averages are a copy of them, and it has no
/// input position and no optimizer state, so no run can continue exactly from it.
bool holds_parameters_only(const TrainingState& state);

/// The format version save_checkpoint() writes for a state without optimizer state (SGD);
/// load_checkpoint() reads it, version 1 and kOptimizerFormatVersion.
inline constexpr std::uint32_t kCheckpointFormatVersion = 2;
/// The format version of a state with optimizer state (--optimizer momentum or adam).
inline constexpr std::uint32_t kOptimizerFormatVersion = 3;

/// Writes `state` to dir/model.ckpt-STEP, STEP being its global_step, atomically, and
/// returns the path.
/// Throws WriteError, naming the file and the reason, when `dir` is missing or not
/// writable (a full disk: exit status 1), and UsageError when the state does not hold
/// kNumParameters finite values twice; an existing file of that name, and every other
/// checkpoint, is then left as it was. UsageError too when optimizer_state does not hold
/// the optimizer's floats, or holds a non-finite one.
std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const TrainingState& state);

/// Writes `state` to exactly `file` (a temporary "<file>.tmp-PID" in its folder, fsync,
/// rename, fsync of the folder) with the same checks as save_checkpoint(). Used by
/// --save-params; touches no file but `file` and its own temporary.
std::filesystem::path save_checkpoint_file(const std::filesystem::path& file,
                                           const TrainingState& state);

/// The size in bytes of the file save_checkpoint() writes (with an input position) for
/// `optimizer`: the free space a checkpoint folder needs for one more save (its temporary
/// file, which the rename then turns into the checkpoint).
std::uintmax_t checkpoint_file_size(Optimizer optimizer = Optimizer::kSgd);

/// Writes `bytes` to `file` atomically and durably, as save_checkpoint_file() does;
/// throws WriteError naming the file, the failed step and the system's reason. A `file`
/// that is a device or a pipe (/dev/null, a FIFO), or a link to one, is written in place,
/// never replaced.
void write_file_atomically(const std::filesystem::path& file, const std::string& bytes);

/// "model.ckpt-STEP", the name save_checkpoint() gives the state of `global_step`.
std::string checkpoint_name(std::int64_t global_step);

/// Reads and validates a checkpoint file; throws UsageError naming the file and problem
/// (an optimizer state cut short or damaged fails the checksum or the length check).
TrainingState load_checkpoint(const std::filesystem::path& file);

/// The checks and decoding of load_checkpoint() on bytes already in memory; `name` is the
/// file named in messages. The fuzz target fuzz/checkpoint_fuzz.cpp calls it directly.
TrainingState parse_checkpoint(const std::string& bytes, const std::filesystem::path& name);

/// The checksum a checkpoint ends with (FNV-1a 64 of every byte before it); the fuzz
/// target appends it so that its inputs reach the parser behind the checksum check.
std::uint64_t checkpoint_checksum(std::string_view body);

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
