// SPDX-License-Identifier: MIT
// TempDir: a fresh folder under the system temp dir, removed with its contents when the
// object goes. Used by tests and tools that need scratch files.
#pragma once

#include <filesystem>
#include <string>

namespace towers::base {

/// A folder `towers-<name>-<pid>` under the temp directory: emptied and created on
/// construction, removed (with its contents) on destruction. The process id keeps
/// concurrent test processes apart; `name` keeps the folders of one process apart.
class TempDir {
 public:
  /// Empties (if left over) and creates the folder for `name`.
  explicit TempDir(const std::string& name);
  /// Removes the folder and everything in it; never throws.
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The folder.
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace towers::base
