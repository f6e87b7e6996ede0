// SPDX-License-Identifier: MIT
// Runs a chapter program the way a learner does and reads what it prints.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/summary.hpp"
#include "model/checkpoint.hpp"

namespace towers::testing {

/// What a finished program printed (stdout and stderr together) and its exit status.
struct ProgramRun {
  int exit_code = -1;
  std::string output;
  /// The `summary:` lines, parsed, in order.
  std::vector<std::map<std::string, std::string>> summaries;
  /// The last summary's value for `key` ("" when absent).
  std::string last(const std::string& key) const {
    if (summaries.empty()) return "";
    auto it = summaries.back().find(key);
    return it == summaries.back().end() ? "" : it->second;
  }
  double number(const std::string& key) const { return std::stod("0" + last(key)); }
};

/// Runs `program` (a path in the build's bin folder) with `args`, to completion.
inline ProgramRun run(const std::string& program, const std::string& args) {
  ProgramRun result;
  std::string command = std::string(TOWERS_BIN_DIR) + "/" + program + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char chunk[4096];
  while (std::fgets(chunk, sizeof chunk, pipe)) result.output += chunk;
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.summaries = parse_summaries(result.output);
  return result;
}

/// A file `name` in a folder of this test process's own under the temp directory.
inline std::filesystem::path temp_file(const std::string& prefix, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

/// The parameters a chapter wrote with --save-params.
inline std::vector<float> saved_params(const std::filesystem::path& file) {
  return model::load_checkpoint(file).params;
}

}  // namespace towers::testing
