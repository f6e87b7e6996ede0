// SPDX-License-Identifier: MIT
#include "cli/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/usage_error.hpp"

namespace towers {

namespace {

// "PID 1234, 03_stream_towers": what the holder wrote, or a note when it has not yet.
std::string holder_of(int fd) {
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : "";
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  return holder.empty() ? "a process that is just starting" : holder;
}

}  // namespace

FolderLock::FolderLock(const std::filesystem::path& folder, const std::string& flag) {
  const std::filesystem::path file = folder / kFolderLockName;
  // O_CLOEXEC: a child process (a shell a test starts) must not keep the lock alive.
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw UsageError(flag + " " + folder.string() + ": cannot create " + file.string() + " (" +
                     std::strerror(errno) + "). Choose a folder you can write to.");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EWOULDBLOCK) {
      const std::string holder = holder_of(fd_);
      ::close(fd_);
      fd_ = -1;
      throw UsageError(flag + " " + folder.string() + " is in use by another run (" + holder +
                       "): two runs saving there would interleave their checkpoints. Wait for "
                       "it to end, or give this run another folder.");
    }
    // ENOLCK, EOPNOTSUPP: a file system without flock. Train, but say what is not guarded.
    std::printf("note: cannot lock %s (%s): another run given the same %s would not be "
                "noticed\n", file.c_str(), std::strerror(error), flag.c_str());
    return;
  }
  // Ours now: say who holds it, for the message of a second run.
  const std::string holder = "PID " + std::to_string(::getpid()) + ", " +
                             program_invocation_short_name + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, holder.data(), holder.size(), 0) < 0) {
    std::printf("note: cannot write %s (%s); the folder is locked all the same\n", file.c_str(),
                std::strerror(errno));
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
}

}  // namespace towers
