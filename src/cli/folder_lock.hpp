// SPDX-License-Identifier: MIT
// FolderLock: one run at a time per output folder.
//
// Two runs given the same --checkpoint-dir would interleave their checkpoints: each saves
// model.ckpt-STEP files the other's --resume then mixes up. So the folder is locked for
// the whole run: FolderLock creates FOLDER/towers.lock, takes an exclusive flock(2) on it
// and writes its PID and program name there, for the message a second run prints.
// The kernel drops the lock when the process ends, however it ends (kill -9 too), so a
// towers.lock left behind by a killed run is harmless: the next run takes it over. A
// file system without flock (some network mounts) gets a warning, not a refusal.
// Used from one thread; the lock belongs to the object. Introduced in chapter 1.
#pragma once

#include <filesystem>
#include <string>

namespace towers {

/// The lock file's name inside a locked folder.
inline constexpr const char* kFolderLockName = "towers.lock";

/// An exclusive lock on an existing folder, held from construction to destruction.
class FolderLock {
 public:
  /// Locks `folder` (given to `flag`; it must exist). Throws UsageError naming the flag,
  /// the folder and the other run's PID and program when another process holds it.
  FolderLock(const std::filesystem::path& folder, const std::string& flag);
  /// Releases the lock (the file stays: see above).
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace towers
