// SPDX-License-Identifier: MIT
// Runs a chapter program the way a learner does and reads what it prints.
#pragma once

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/process.hpp"
#include "base/temp_dir.hpp"
#include "cli/summary.hpp"
#include "model/checkpoint.hpp"

namespace towers::testing {

/// A program and flags it must refuse (exit status 2, before its first step), with what
/// its message must say: the rows of the tests of the flags' checks.
struct RefusedFlags {
  std::string program, args, message;
};

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

/// Whether `run` was refused as a usage error (exit status 2, docs/reliability.md) with a
/// message that says `what`: EXPECT_TRUE(refused(r, "...")) prints which of the two failed
/// and the output.
inline ::testing::AssertionResult refused(const ProgramRun& run, const std::string& what) {
  if (run.exit_code != 2) {
    return ::testing::AssertionFailure()
           << "exit status " << run.exit_code << ", not 2 (a usage error):\n" << run.output;
  }
  if (run.output.find(what) == std::string::npos) {
    return ::testing::AssertionFailure() << "the message does not say \"" << what << "\":\n"
                                         << run.output;
  }
  return ::testing::AssertionSuccess();
}

/// Runs `program` (a path in the build's bin folder) with `args`, to completion.
/// `prefix` goes before the program in the shell command: "VAR=value " to set the
/// environment, or a command such as setpriv that runs it as another user.
inline ProgramRun run(const std::string& program, const std::string& args,
                      const std::string& prefix = "") {
  ProgramRun result;
  auto ran = base::run_command(prefix + std::string(TOWERS_BIN_DIR) + "/" + program + " " +
                               args + " 2>&1");
  result.exit_code = ran.exit_code;
  result.output = std::move(ran.output);
  result.summaries = parse_summaries(result.output);
  return result;
}

/// Starts `argv` (argv[0] a path) with its output on a pipe, reads that output until it
/// contains `marker`, calls `on_marker(pid)` once, then reads to the end and waits. Kills
/// it (SIGKILL; exit_code stays -1) if it still runs after `timeout_s` seconds.
template <typename OnMarker>
ProgramRun run_and_watch(std::vector<std::string> argv, const std::string& marker,
                         OnMarker on_marker, int timeout_s = 120) {
  ProgramRun result;
  int out[2];
  if (::pipe(out) != 0) return result;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    std::vector<char*> args;
    for (auto& word : argv) args.push_back(word.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool seen = false;
  char chunk[4096];
  for (;;) {
    pollfd ready{out[0], POLLIN, 0};
    if (::poll(&ready, 1, 200) == 0) {
      if (std::chrono::steady_clock::now() > deadline) ::kill(pid, SIGKILL);
      continue;
    }
    const ssize_t n = ::read(out[0], chunk, sizeof chunk);
    if (n <= 0) break;
    result.output.append(chunk, static_cast<std::size_t>(n));
    if (!seen && result.output.find(marker) != std::string::npos) {
      seen = true;
      on_marker(pid);
    }
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.summaries = parse_summaries(result.output);
  return result;
}

/// The argv of `program` (a file name in the build's bin folder) with `args` split at
/// spaces, for run_and_watch.
inline std::vector<std::string> argv_of(const std::string& program, const std::string& args) {
  std::vector<std::string> argv{std::string(TOWERS_BIN_DIR) + "/" + program};
  for (std::size_t start = 0; start < args.size();) {
    const std::size_t end = std::min(args.find(' ', start), args.size());
    if (end > start) argv.push_back(args.substr(start, end - start));
    start = end + 1;
  }
  return argv;
}

/// Runs `program` with `args` (split at spaces) and sends it `signal` once its output
/// contains `marker`; see run_and_watch. The program may receive it at any point after
/// the marker: a test of one signal must not care where.
inline ProgramRun run_and_signal(const std::string& program, const std::string& args,
                                 const std::string& marker, int signal, int timeout_s = 120) {
  return run_and_watch(argv_of(program, args), marker, [&](pid_t pid) { ::kill(pid, signal); },
                       timeout_s);
}

/// Runs `program` and, once its output contains `marker` (a step's log line, so that it
/// is inside the training loop), makes a first and a second stop signal arrive together:
/// it freezes the process (SIGSTOP), sends `first` and then `second` while nothing of it
/// runs, and thaws it (SIGCONT). Both are then pending before the program can run one
/// more instruction of its step, so the second reaches the handler before the step can
/// end. Two signals of one kind pending at once are one signal, so `second` must differ
/// from `first` (SIGINT, then SIGTERM: a Ctrl-C, then a `kill`).
/// Why not two signals some time apart: a step can end between them, and then the program
/// stops normally and the second signal meets no handler; whether it does depends on the
/// machine's speed and load (issue 38: 1 run in 8 failed so).
inline ProgramRun run_and_signal_twice(const std::string& program, const std::string& args,
                                       const std::string& marker, int first, int second,
                                       int timeout_s = 120) {
  return run_and_watch(argv_of(program, args), marker, [&](pid_t pid) {
    ::kill(pid, SIGSTOP);
    ::kill(pid, first);
    ::kill(pid, second);
    ::kill(pid, SIGCONT);
  }, timeout_s);
}

/// The pids of the processes of `program` (a file name in the build's bin folder) whose
/// command line contains `word` (a path unique to one test), read from /proc: mpiexec
/// starts the ranks, so a test has no other way to name them.
inline std::vector<pid_t> rank_pids(const std::string& program, const std::string& word) {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    if (argv0.ends_with("/" + program) && cmdline.find(word) != std::string::npos) {
      pids.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return pids;
}

/// A file `prefix-name` in a folder of this test process's own under the temp directory;
/// the folder goes when the process exits.
inline std::filesystem::path temp_file(const std::string& prefix, const std::string& name) {
  static const base::TempDir dir("chapters");
  return dir.path() / (prefix + "-" + name);
}

/// The parameters a chapter wrote with --save-params.
inline std::vector<float> saved_params(const std::filesystem::path& file) {
  return model::load_checkpoint(file).params;
}

/// The largest |b[i] - a[i]| over two parameter sets, in double: the largest update of a
/// step (a: before, b: after), or how far two runs' results are apart. NaN when the sets
/// differ in size or a difference is NaN, so that every comparison with it fails (an
/// infinity would pass `diff <= bound` when the bound is infinite too).
inline double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::quiet_NaN();
  double largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double difference = std::abs(double(b[i]) - a[i]);
    if (std::isnan(difference)) return difference;  // std::max would skip it
    largest = std::max(largest, difference);
  }
  return largest;
}

/// Two programs' first step from the same start, as their --save-params files: how far
/// the step moved the parameters (`start` to `reference`), and how far `other` lands from
/// `reference`. Each is largest_difference, so NaN when a file holds another count.
struct OneStepApart {
  double largest_update;
  double largest_difference;
};
inline OneStepApart one_step_apart(const std::filesystem::path& start,
                                   const std::filesystem::path& reference,
                                   const std::filesystem::path& other) {
  const std::vector<float> p0 = saved_params(start), after = saved_params(reference);
  return {largest_difference(p0, after), largest_difference(after, saved_params(other))};
}

}  // namespace towers::testing
