// SPDX-License-Identifier: MIT
#include "base/process.hpp"

#include <sys/wait.h>

#include <cstdio>

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

}  // namespace towers::base
