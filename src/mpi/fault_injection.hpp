// SPDX-License-Identifier: MIT
// Test hooks that make one rank fail on purpose, so the tests can prove that a failing
// rank ends the job with a message instead of hanging it:
//
//   --fail-rank R --fail-at-step S --fail-how kill    rank R sends itself SIGKILL at the
//       start of step S: it dies without a word, as a crashed or OOM-killed process does;
//       mpirun sees it and ends the job naming the rank and the signal.
//   --fail-how stall    rank R stops answering (sleeps for ever) at step S: the others
//       wait in the all-reduce until the watchdog ends the job naming the collective.
//   --fail-how throw    rank R throws at step S: it aborts the job naming itself and the cause.
//
// Off unless --fail-rank is given. Introduced in chapter 5.
#pragma once

#include <string>

#include "mpi/mpi_job.hpp"

namespace towers {

/// Which rank fails, when and how.
struct FaultFlags {
  int rank = -1;             ///< --fail-rank; -1: no rank fails
  int step = 0;              ///< --fail-at-step
  std::string how = "kill";  ///< --fail-how kill|stall|throw
};

/// At the start of step `step`: fails this rank as `flags` say, if they name it and the step.
void maybe_fail(const FaultFlags& flags, const MpiJob& job, int step);

}  // namespace towers
