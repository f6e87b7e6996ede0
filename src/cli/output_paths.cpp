// SPDX-License-Identifier: MIT
#include "cli/output_paths.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "base/usage_error.hpp"

namespace towers {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(const std::string& flag, const fs::path& path, const std::string& why,
                         const std::string& what_to_do) {
  throw UsageError(flag + " " + path.string() + ": " + why + ". " + what_to_do);
}

// Creates and removes a file in `folder`: the one honest test that files can be made
// there (permissions, read-only mounts, ACLs and root all answer it correctly).
void probe_writable(const fs::path& folder, const std::string& flag, const fs::path& shown) {
  const fs::path probe = folder / (".towers-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    refuse(flag, shown, "cannot create files in " + folder.string() + " (" + std::strerror(errno) + ")",
           "Choose a folder you can write to.");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

void check_output_file(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  const fs::path file(path);
  std::error_code ec;
  // A symbolic link is refused up front rather than written through: the write would land
  // on its target, maybe a file elsewhere that no one meant to overwrite, or, for a link
  // whose target is gone, fail after the run. A link to a device (/dev/stdout) is written
  // in place, as the device itself is.
  if (fs::is_symlink(fs::symlink_status(file, ec))) {
    const fs::file_status target = fs::status(file, ec);
    if (!fs::exists(target) || fs::is_regular_file(target) || fs::is_directory(target)) {
      const fs::path to = fs::read_symlink(file, ec);
      refuse(flag, file, "is a symbolic link (to " + to.string() + ")" +
                             (fs::exists(target) ? "" : ", whose target does not exist"),
             "Outputs are not written through links. Give the target's own path, or a new name.");
    }
  }
  if (fs::is_directory(file, ec)) {
    refuse(flag, file, "is a folder, not a file", "Give a file name, e.g. " + (file / "out").string() + ".");
  }
  const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (!fs::exists(folder, ec)) {
    refuse(flag, file, "its folder " + folder.string() + " does not exist",
           "Create it first (mkdir -p " + folder.string() + ") or choose another path.");
  }
  if (!fs::is_directory(folder, ec)) {
    refuse(flag, file, folder.string() + " is not a folder", "Choose another path.");
  }
  if (fs::exists(file, ec) && !fs::is_regular_file(file, ec)) {
    // A device such as /dev/null or /dev/full: written in place, as the user asked.
    if (::access(file.c_str(), W_OK) != 0) {
      refuse(flag, file, std::string("cannot be written (") + std::strerror(errno) + ")",
             "Choose another path.");
    }
    return;
  }
  probe_writable(folder, flag, file);
}

void prepare_output_folder(const fs::path& path, const std::string& flag) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_directory(path, ec)) {
    refuse(flag, path, "is a file, not a folder", "Give a folder (it is created if missing).");
  }
  fs::create_directories(path, ec);
  if (ec) {
    refuse(flag, path, "cannot create the folder (" + ec.message() + ")",
           "Choose a folder you can write to.");
  }
  probe_writable(path, flag, path);
}

std::uintmax_t free_bytes(const std::filesystem::path& folder, const std::string& flag) {
  struct statvfs fs {};
  if (::statvfs(folder.c_str(), &fs) != 0) {
    throw UsageError(flag + " " + folder.string() + ": cannot ask how much space is free (" +
                     std::strerror(errno) + ")");
  }
  return static_cast<std::uintmax_t>(fs.f_bavail) * fs.f_frsize;  // f_bavail: not root's reserve
}

namespace {
// "8553172 bytes (8.2 MiB)": exact for a script, readable for a person.
std::string bytes_text(std::uintmax_t bytes) {
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return std::to_string(bytes) + " bytes (" + mib + ")";
}
}  // namespace

void require_free_space(const std::filesystem::path& folder, std::uintmax_t needed,
                        const std::string& what, const std::string& flag) {
  const std::uintmax_t free = free_bytes(folder, flag);
  if (free >= needed) return;
  throw UsageError(flag + " " + folder.string() + " has " + bytes_text(free) + " free, but " +
                   what + " needs " + bytes_text(needed) + ". Free space there or choose a "
                   "folder on a larger disk; the run would otherwise fail at its first save, "
                   "after the training it was meant to keep.");
}

}  // namespace towers
