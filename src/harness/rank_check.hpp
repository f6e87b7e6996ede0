// SPDX-License-Identifier: MIT
// RankParameterCheck: do the ranks still hold the same model?
//
// Chapter 4's ParameterCheck, across processes. Every rank applies the same mean to its
// own copy of the parameters, so the copies must stay bit-identical. Every --check-every
// steps and at the last step each rank hashes its copy (fnv1a), MPI_Allgather gives every
// rank every checksum, and on a mismatch every rank throws the same message naming the
// groups of ranks that agree, so the job stops (run_rank_program aborts it).
//
// --inject-divergence STEP (a test hook) nudges one parameter of the last rank by one ulp
// after step STEP, so the tests can prove that the check catches it.
// Used from the training thread, after the step's wait. Introduced in chapter 5.
#pragma once

#include <cstddef>

#include "harness/parameter_check.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/tower.hpp"

namespace towers {

/// Compares the ranks' parameter copies by checksum.
class RankParameterCheck {
 public:
  /// Checks `count` floats of `tower`'s parameters (tower, job and watchdog must outlive
  /// it) in a run of `steps` steps. Throws UsageError for --inject-divergence with one rank.
  RankParameterCheck(Tower& tower, std::size_t count, const CheckFlags& flags, int steps,
                     const MpiJob& job, Watchdog& watchdog);

  /// Call on every rank after step `step`, `params` being this rank's copy (on its device).
  /// Throws std::runtime_error naming the ranks that differ.
  void after_step(int step, float* params);

  /// Checks done so far, all passed.
  int checks() const { return checks_; }

 private:
  void compare(int step, float* params);

  Tower& tower_;
  std::size_t count_;
  CheckFlags flags_;
  int steps_;
  const MpiJob& job_;
  Watchdog& watchdog_;
  int checks_ = 0;
  Buffer staging_;  // [count] pinned host floats
};

}  // namespace towers
