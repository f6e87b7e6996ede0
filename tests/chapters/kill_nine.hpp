// SPDX-License-Identifier: MIT
// The kill -9 and resume check that every chapter with checkpoints passes: in one process
// (chapters 2 to 10, reliability_test.cpp) and as a job of ranks started with mpiexec
// (chapters 5 and 6, ranks.hpp). What differs is only how the job is run and killed.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "exact_resume.hpp"
#include "model/checkpoint.hpp"
#include "program.hpp"

namespace towers::testing {

/// How one kind of job runs, for expect_kill_nine_and_exact_resume.
struct KillNineJob {
  /// Runs the job with `args` to its end.
  std::function<ProgramRun(const std::string& args)> run;
  /// Runs the job with `args` into `killed`, SIGKILLs every process of it once it has
  /// logged step 3 (so its checkpoint of step 3 is complete; no handler runs, a later save
  /// may be cut off mid-write), and checks that it was killed (a fatal failure ends the
  /// test). `folder` is the job's checkpoint folder, a path no other test's job names.
  std::function<void(const std::string& args, const std::filesystem::path& folder,
                     ProgramRun& killed)> run_and_kill;
  /// The summary key of the last step's loss.
  std::string loss_key = "final_loss";
};

/// One process of `program`, killed with SIGKILL.
inline KillNineJob one_process(const std::string& program) {
  return {[program](const std::string& args) { return run(program, args); },
          [program](const std::string& args, const std::filesystem::path&, ProgramRun& killed) {
            killed = run_and_watch(argv_of(program, args), "step 3,",
                                   [](pid_t pid) { ::kill(pid, SIGKILL); });
            ASSERT_EQ(killed.exit_code, -1) << "not killed:\n" << killed.output;
          }};
}

/// Runs the job 10 steps in one go, and again saving every step but killed after step 3,
/// then resumed to step 10, all in folders under `dir`; `flags` are the job's own (a data
/// folder whose epoch is a few steps, so the run crosses epochs and the kill lands
/// mid-epoch). The last checkpoint (parameters, moving averages, the input's position) and
/// --save-params must be equal byte for byte: the resumed job's input must start at the
/// global batch where the killed one stood, in every process.
inline void expect_kill_nine_and_exact_resume(const std::filesystem::path& dir,
                                              const std::string& flags, const KillNineJob& job) {
  namespace fs = std::filesystem;
  constexpr int kSteps = 10;
  const fs::path straight = dir / "straight", killed = dir / "killed";
  auto a = job.run(flags + "--steps " + std::to_string(kSteps) + " --checkpoint-dir " +
                   straight.string() + " --save-params " + (dir / "a.params").string());
  ASSERT_EQ(a.exit_code, 0) << a.output;

  ProgramRun b1;
  job.run_and_kill(flags + "--steps " + std::to_string(kSteps) +
                       " --checkpoint-every 1 --checkpoint-dir " + killed.string(),
                   killed, b1);
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_TRUE(b1.summaries.empty()) << b1.output;
  const auto latest = model::latest_checkpoint(killed);
  ASSERT_TRUE(latest.has_value()) << b1.output;
  const std::int64_t reached = model::load_checkpoint(*latest).global_step;
  ASSERT_GE(reached, 3) << b1.output;
  ASSERT_LT(reached, kSteps) << b1.output;

  auto b2 = job.run(flags + "--steps " + std::to_string(kSteps - reached) +
                    " --resume --checkpoint-dir " + killed.string() + " --save-params " +
                    (dir / "b.params").string());
  ASSERT_EQ(b2.exit_code, 0) << b2.output;
  EXPECT_NE(b2.output.find("resumed from " + latest->string()), std::string::npos) << b2.output;
  EXPECT_EQ(b2.last("global_step"), std::to_string(kSteps)) << b2.output;
  EXPECT_EQ(a.last("global_step"), std::to_string(kSteps)) << a.output;
  ASSERT_FALSE(a.last(job.loss_key).empty()) << a.output;
  EXPECT_EQ(a.last(job.loss_key), b2.last(job.loss_key));
  const std::string name = model::checkpoint_name(kSteps);
  const std::string expected = bytes_of(straight / name);
  ASSERT_FALSE(expected.empty()) << a.output;
  // EXPECT_TRUE, not EXPECT_EQ: a diff of two 4 MB strings would take gtest minutes.
  EXPECT_TRUE(expected == bytes_of(killed / name)) << name << " differs after kill -9 and --resume";
  const std::string params = bytes_of(dir / "a.params");
  ASSERT_FALSE(params.empty()) << a.output;
  EXPECT_TRUE(params == bytes_of(dir / "b.params")) << "--save-params files differ";
}

}  // namespace towers::testing
