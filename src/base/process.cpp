// SPDX-License-Identifier: MIT
#include "base/process.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace towers::base {

CommandResult run_command(const std::string& command,
                          const std::function<void(std::string_view)>& echo) {
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char chunk[4096];
  while (std::fgets(chunk, sizeof chunk, pipe) != nullptr) {
    if (echo) echo(chunk);
    result.output += chunk;
  }
  const int status = pclose(pipe);
  result.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

namespace {

// `name` as execv needs it: itself when it holds a '/', else the first executable file of
// that name in PATH's folders (as a shell finds `python3`); "" when there is none. Done
// before fork(), since the child of a threaded program may only make async-signal-safe
// calls, which execvp's search is not.
std::string program_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  const std::string folders = path != nullptr ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= folders.size();) {
    const std::size_t end = std::min(folders.find(':', start), folders.size());
    const std::string folder = end > start ? folders.substr(start, end - start) : ".";
    const std::string candidate = folder + "/" + name;
    struct stat info{};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

}  // namespace

CommandResult run_argv(const std::vector<std::string>& argv,
                       const std::function<void(std::string_view)>& echo) {
  CommandResult result;
  if (argv.empty()) return result;
  const std::string program = program_path(argv[0]);
  if (program.empty()) {
    result.exit_code = 127;  // as a shell says "command not found"
    return result;
  }
  std::vector<char*> args;
  for (const std::string& word : argv) args.push_back(const_cast<char*>(word.c_str()));
  args.push_back(nullptr);
  int out[2];
  // Close-on-exec: a child that another thread forks meanwhile, or the program run here,
  // must not keep the write end open (the read below would never see its end); dup2 gives
  // the child its own stdout and stderr without the flag.
  if (::pipe2(out, O_CLOEXEC) != 0) return result;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return result;
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    ::execv(program.c_str(), args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  char chunk[4096];
  for (ssize_t n; (n = ::read(out[0], chunk, sizeof chunk)) != 0;) {
    if (n > 0) {
      result.output.append(chunk, static_cast<std::size_t>(n));
      if (echo) echo(std::string_view(chunk, static_cast<std::size_t>(n)));
    } else if (errno != EINTR) {
      break;
    }
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace towers::base
