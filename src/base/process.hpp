// SPDX-License-Identifier: MIT
// run_command: runs a shell command to completion and keeps what it printed. The tests
// run chapter programs this way, as a learner would. run_argv runs a program without a
// shell: the benchmarks run chapters and reference scripts (PyTorch's) this way.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace towers::base {

/// What a finished command printed on stdout and how it ended.
struct CommandResult {
  int exit_code = -1;  ///< the exit status; -1 when it could not start or died of a signal
  std::string output;  ///< its stdout (add " 2>&1" to the command for stderr too)
};

/// Runs `command` with /bin/sh and reads its stdout to the end. `echo`, when given, sees
/// each piece of output as it arrives (to show progress while the command runs).
CommandResult run_command(const std::string& command,
                          const std::function<void(std::string_view)>& echo = {});

/// Runs the program `argv[0]` with the arguments `argv[1..]` as they are, with no shell
/// between: no word splitting, no quoting, nothing a folder's name can inject. `argv[0]`
/// is a path, or a bare name (no '/') looked up in PATH as a shell would. Reads its stdout
/// and stderr, together, to the end; `echo`, when given, sees each piece as it arrives.
/// exit_code 127: it could not start (not found, or not executable).
CommandResult run_argv(const std::vector<std::string>& argv,
                       const std::function<void(std::string_view)>& echo = {});

}  // namespace towers::base
