// SPDX-License-Identifier: MIT
// RankFlags: the command line of a program of ranks (chapter 5's 05_ranks and chapter 6's
// 06_overlap_ranks): the program's CLI::App, made with its --help description, holding the
// flags both programs take, so that a program declares only its own (on `flags.app`).
//
// They are the shared training flags without --towers (the towers are the ranks),
// --save-params (rank 0 writes it), --allreduce (mpi, ring, nccl or auto), the iterators'
// flags (--prefetch, --input-threads), the parameter check's, --collective-timeout, chapter
// 1's checkpoint flags for a job (harness/rank_checkpoints.hpp) and the test hooks that
// make one rank fail (--fail-rank, ...), in that order in --help. CLI11 keeps references
// to the members, so a RankFlags stays where it was made (no copies). Introduced in
// chapter 5.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "harness/parameter_check.hpp"
#include "harness/rank_checkpoints.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/training.hpp"
#include "mpi/fault_injection.hpp"

namespace towers {

/// The programs of ranks' flags, as described above; `flags.steps`, `flags.seed`, ... read
/// as TrainingFlags' own.
struct RankFlags : TrainingFlags {
  /// Makes `app` with --help's `description` and adds every flag above to it.
  explicit RankFlags(const std::string& description);
  RankFlags(const RankFlags&) = delete;
  RankFlags& operator=(const RankFlags&) = delete;

  /// How long any one collective may wait for the other ranks (the Watchdog's limit).
  std::chrono::milliseconds collective_timeout() const;

  /// The program's command line: run_rank_program(flags.app, ...) parses it.
  CLI::App app;
  std::string allreduce = "auto";      ///< --allreduce: auto, mpi, ring or nccl
  InputFlags input;                    ///< the iterators': TowerInputs
  CheckFlags check;                    ///< RankParameterCheck's
  double collective_timeout_s = 30;    ///< --collective-timeout, in seconds
  RankCheckpointFlags rank_checkpoints;  ///< --checkpoint-dir, --resume, ... for the job
  FaultFlags faults;                   ///< --fail-rank, --fail-at-step, --fail-how
};

/// Refuses --link-gbps and --link-latency-us (UsageError saying why and what to do): they
/// slow the simulated link between one process's devices, and ranks talk over a real one.
/// `program` is the binary's name, for the two-hosts command the message suggests.
void refuse_simulated_link(const TrainingFlags& flags, const std::string& program);

}  // namespace towers
