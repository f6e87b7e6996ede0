// SPDX-License-Identifier: MIT
// TowerFlags: the command line of a tower chapter (chapters 2-4, 6-8 and 10): the program's
// CLI::App, made with the chapter's --help description, holding the flags every tower
// chapter takes, so that a chapter's main.cpp declares only its own (on `flags.app`).
//
// They are the shared training flags (--backend, --devices, --towers, --steps, ...),
// --probe, --save-params, and chapter 1's checkpoint flags (--checkpoint-dir,
// --checkpoint-every, --resume, --resume-if-present, --overwrite, --eval), in that order in
// --help. With the checkpoint flags TowerTraining::start() resumes the chapter's variables
// and input and the run saves them: a chapter needs nothing more for them. CLI11 keeps
// references to the members, so a TowerFlags stays where it was made (no copies).
// Introduced in chapter 2.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "harness/parameter_check.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/training.hpp"

namespace towers {

/// The tower chapters' flags, as described above; `flags.steps`, `flags.seed`, ... read as
/// TrainingFlags' own.
struct TowerFlags : TrainingFlags {
  /// Makes `app` with --help's `description` and adds every flag above to it.
  explicit TowerFlags(const std::string& description);
  TowerFlags(const TowerFlags&) = delete;
  TowerFlags& operator=(const TowerFlags&) = delete;

  /// The program's command line: run_program(flags.app, ...) parses it; a chapter adds
  /// its own flags to it.
  CLI::App app;
  /// --probe: prove concurrency with a rendezvous across the towers (StepScope::probe).
  bool probe = false;
};

/// Chapter 4's command line, which chapter 6 keeps: TowerFlags, then --allreduce (how the
/// towers meet, harness/lesson_flags.hpp), the towers' iterators' flags (--prefetch,
/// --input-threads) and the parameter check's (--check-every, --inject-divergence).
struct AllReduceTowerFlags : TowerFlags {
  /// Makes the command line and adds every flag above to it.
  explicit AllReduceTowerFlags(const std::string& description);

  std::string allreduce = "auto";  ///< --allreduce: auto, device0, ring or nccl
  InputFlags input;                ///< the iterators': TowerInputs
  CheckFlags check;                ///< ParameterCheck's
};

}  // namespace towers
