// SPDX-License-Identifier: MIT
// The flags and the start of a program of ranks (chapters 5 and 6's 06_overlap_ranks),
// the harness around an MpiJob (mpi/mpi_job.hpp).
//
// run_rank_program() is run_program() for ranks: rank 0 alone prints (the others' stdout
// goes to /dev/null; stderr stays, for errors), a usage error is reported once and every
// rank exits with 2, and any other failure on any rank ends the whole job with MPI_Abort
// after a line naming the rank and the cause. add_fault_flags() adds the test hooks that
// make one rank fail on purpose (mpi/fault_injection.hpp). Introduced in chapter 5.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "mpi/fault_injection.hpp"
#include "mpi/mpi_job.hpp"

namespace towers {

/// Parses the flags and runs `body` on every rank, as described above; returns the exit
/// code of this rank.
int run_rank_program(CLI::App& app, int argc, char** argv,
                     const std::function<int(MpiJob&)>& body);

/// Adds --fail-rank, --fail-at-step and --fail-how (mpi/fault_injection.hpp) to `app`, in
/// a group of their own ("Test hooks").
void add_fault_flags(CLI::App& app, FaultFlags& flags);

}  // namespace towers
