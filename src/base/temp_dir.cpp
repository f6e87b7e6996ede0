// SPDX-License-Identifier: MIT
#include "base/temp_dir.hpp"

#include <unistd.h>

#include <system_error>

namespace towers::base {

TempDir::TempDir(const std::string& name)
    : path_(std::filesystem::temp_directory_path() /
            ("towers-" + name + "-" + std::to_string(::getpid()))) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;  // a destructor must not throw; a leftover folder is harmless
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace towers::base
