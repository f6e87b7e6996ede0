// SPDX-License-Identifier: MIT
// Starts a chapter's ranks with mpiexec, as a learner does (chapters 5 and 6). Needs
// TOWERS_MPIEXEC, which CMake defines for the tests built with MPI.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "base/process.hpp"
#include "base/timing.hpp"
#include "cli/summary.hpp"
#include "kill_nine.hpp"
#include "program.hpp"

namespace towers::testing {

/// What a job of ranks printed, and how long it took.
struct RankRun : ProgramRun {
  double seconds = 0;
};

/// mpiexec -n `ranks` `program` `args` (ranks may exceed cores: --oversubscribe; CI runs as
/// root: --allow-run-as-root), bounded by `timeout_s` so that a hang fails the test
/// instead of stalling ctest.
inline std::string mpiexec_command(const std::string& program, int ranks, const std::string& args,
                                   int timeout_s = 90) {
  return "timeout -k 10 " + std::to_string(timeout_s) + " " TOWERS_MPIEXEC
         " --allow-run-as-root --oversubscribe -n " + std::to_string(ranks) +
         " " TOWERS_BIN_DIR "/" + program + " " + args;
}

/// Runs mpiexec_command() to the end; also measures how long the job took.
inline RankRun run_ranks(const std::string& program, int ranks, const std::string& args,
                         int timeout_s = 90) {
  const auto start = base::Clock::now();
  RankRun result;
  auto ran = base::run_command(mpiexec_command(program, ranks, args, timeout_s) + " 2>&1");
  result.exit_code = ran.exit_code;
  result.output = std::move(ran.output);
  result.summaries = parse_summaries(result.output);
  result.seconds = base::seconds_since(start);
  return result;
}

/// A job of two ranks of `program`, for expect_kill_nine_and_exact_resume: every rank is
/// SIGKILLed once rank 0 has logged step 3; mpiexec then ends the job.
inline KillNineJob two_ranks(const std::string& program) {
  return {[program](const std::string& args) -> ProgramRun { return run_ranks(program, 2, args); },
          [program](const std::string& args, const std::filesystem::path& folder,
                    ProgramRun& killed) {
            std::size_t ranks_killed = 0;
            killed = run_and_watch({"/bin/sh", "-c", mpiexec_command(program, 2, args)},
                                   ": step 3,", [&](pid_t) {
                                     for (pid_t rank : rank_pids(program, folder.string())) {
                                       ranks_killed += ::kill(rank, SIGKILL) == 0 ? 1 : 0;
                                     }
                                   });
            EXPECT_EQ(ranks_killed, 2u) << killed.output;
            ASSERT_NE(killed.exit_code, 0) << "not killed:\n" << killed.output;
          }};
}

/// Chapter 5's stop on a signal, for any job of two ranks of `program` (the `command`
/// runs it for many steps, saving into `folder`, a path on both ranks' command lines):
/// once rank 0 has logged step 1, one rank alone gets SIGTERM. That rank finishes its step,
/// the ranks agree to stop after the same one, rank 0 saves it and the job exits 143.
/// Checks all of that and returns the global step saved (0 when the job did not say).
inline int stop_one_rank_with_sigterm(const std::string& command, const std::string& program,
                                      const std::filesystem::path& folder) {
  const ProgramRun stopped = run_and_watch({"/bin/sh", "-c", command}, ": step 1,", [&](pid_t) {
    const std::vector<pid_t> ranks = rank_pids(program, folder.string());
    EXPECT_EQ(ranks.size(), 2u) << "two ranks should be running";
    if (!ranks.empty()) ::kill(ranks.back(), SIGTERM);  // one rank, whichever it is
  });
  EXPECT_EQ(stopped.exit_code, 143) << "the signalled rank's status\n" << stopped.output;
  const std::string step = stopped.last("global_step");
  EXPECT_FALSE(step.empty()) << "rank 0 ended with its summary\n" << stopped.output;
  if (step.empty()) return 0;
  const int k = std::stoi(step);
  EXPECT_GE(k, 2) << stopped.output;
  EXPECT_LT(k, 100000) << stopped.output;
  const std::filesystem::path saved = folder / ("model.ckpt-" + step);
  EXPECT_NE(stopped.output.find("saved " + saved.string()), std::string::npos) << stopped.output;
  return k;
}

}  // namespace towers::testing
