// SPDX-License-Identifier: MIT
// run_command: runs a shell command to completion and keeps what it printed. The tests
// run chapter programs this way, as a learner would, and the benchmarks run chapters and
// reference scripts.
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

/// Runs the program `argv[0]` (a path) with the arguments `argv[1..]` as they are, with no
/// shell between: no word splitting, no quoting, nothing a folder's name can inject.
/// Reads its stdout and stderr, together, to the end. exit_code 127: it could not start.
CommandResult run_argv(const std::vector<std::string>& argv);

}  // namespace towers::base
