// SPDX-License-Identifier: MIT
// What the benches that run a chapter program many times share (bench_towers,
// bench_overlap, bench_sharded, bench_pipeline): finding the program, building its argv,
// and reading the summary line it printed.
#pragma once

#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/process.hpp"
#include "cli/summary.hpp"

namespace towers::bench {

/// One summary line: key -> value.
using SummaryMap = std::map<std::string, std::string>;

/// The folder this bench's executable is in, where the chapter programs are built too.
inline std::string own_directory() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

/// Runs `argv` (no shell: --bin-dir may hold spaces or ';'), returns the last summary line
/// it printed. Throws, with the command and the end of its output, when there is none,
/// when that line lacks `key` (the one the bench reads), or, with `must_succeed`, when the
/// program exited non-zero.
inline SummaryMap run_chapter(const std::vector<std::string>& argv, const std::string& key,
                              bool must_succeed = true) {
  const auto [status, text] = base::run_argv(argv);
  const auto summaries = parse_summaries(text);
  if ((must_succeed && status != 0) || summaries.empty() || !summaries.back().contains(key)) {
    std::string command;
    for (const std::string& word : argv) command += (command.empty() ? "" : " ") + word;
    const std::size_t tail = text.size() > 600 ? text.size() - 600 : 0;
    throw std::runtime_error("no summary from: " + command + "\n" + text.substr(tail));
  }
  return summaries.back();
}

/// `argv` with `more` appended.
inline std::vector<std::string> with(std::vector<std::string> argv,
                                     const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

/// A number as a flag's value: 0.25, 1, 25 (as people type them, not 0.250000).
inline std::string flag_number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace towers::bench
