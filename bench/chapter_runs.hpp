// SPDX-License-Identifier: MIT
// What the benches that run a chapter program many times share (bench_towers,
// bench_overlap, bench_sharded, bench_pipeline): their common flags, finding the program,
// building its argv, running it `repeats` times and reading the summary line it printed.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/process.hpp"
#include "base/usage_error.hpp"
#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "model/network.hpp"  // kMaxBatchSize

namespace towers::bench {

/// One summary line: key -> value.
using SummaryMap = std::map<std::string, std::string>;

/// The folder this bench's executable is in, where the chapter programs are built too.
inline std::string own_directory() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

/// `name`, a chapter program, in `bin_dir` (empty: this bench's own folder). A usage error
/// when it is not there: build it, or point --bin-dir at it.
inline std::string chapter_program(const std::string& bin_dir, const std::string& name) {
  const std::string program = (bin_dir.empty() ? own_directory() : bin_dir) + "/" + name;
  if (!std::filesystem::exists(program)) {
    throw UsageError(program + " not found; build target " + name +
                     ", or point --bin-dir at it.");
  }
  return program;
}

/// Adds --batch-size (images per tower per step) and --steps (per run, the first not
/// timed), each checked in the chapters' ranges as it is parsed: CLI11 reads an empty value
/// as 0, and a value a chapter refuses would end the bench with "no summary from".
inline void add_step_flags(CLI::App& app, int& batch_size, int& steps) {
  app.add_option("--batch-size", batch_size, "images per tower per step")
      ->capture_default_str()->check(whole_number(1, model::kMaxBatchSize));
  app.add_option("--steps", steps, "steps per run (the first is not timed)")
      ->capture_default_str()->check(whole_number(2, 1000000, "(the first step is not timed)"));
}

/// Adds --repeats (`repeats_help`: what runs again and which run is kept) and --bin-dir
/// (`programs`: which chapter programs it names).
inline void add_repeat_flags(CLI::App& app, int& repeats, std::string& bin_dir,
                             const std::string& repeats_help, const std::string& programs) {
  app.add_option("--repeats", repeats, repeats_help)
      ->capture_default_str()->check(whole_number(1, 1000));
  app.add_option("--bin-dir", bin_dir, "where " + programs + " (default: here)");
}

/// Adds --links: the link bandwidths in Gb/s to run at, 0 meaning unlimited (no --link-gbps).
inline void add_links_flag(CLI::App& app, std::vector<double>& links) {
  app.add_option("--links", links, "link bandwidths in Gb/s, 0: unlimited")
      ->delimiter(',')
      ->capture_default_str()
      ->check(link_gbps(/*zero_means_unlimited=*/true));
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

/// The fastest of `repeats` runs of `command` (least step_ms), whose summary has `key`.
inline SummaryMap best_of(const std::vector<std::string>& command, int repeats,
                          const std::string& key) {
  const auto step_ms = [](const SummaryMap& s) { return std::stod(s.at("step_ms")); };
  SummaryMap best;
  for (int r = 0; r < repeats; ++r) {
    SummaryMap s = run_chapter(command, key);
    if (r == 0 || step_ms(s) < step_ms(best)) best = s;
  }
  return best;
}

/// `argv` with `more` appended.
inline std::vector<std::string> with(std::vector<std::string> argv,
                                     const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

/// The summary's value at `key` as a number (run_chapter and best_of made sure it is there).
inline double number(const SummaryMap& summary, const std::string& key) {
  return std::stod(summary.at(key));
}

/// A number as a flag's value: 0.25, 1, 25 (as people type them, not 0.250000).
inline std::string flag_number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace towers::bench
