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
  explicit TempDir(const std::string& name);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The folder.
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace towers::base
