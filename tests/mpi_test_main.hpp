// SPDX-License-Identifier: MIT
// What the tests that ctest runs under mpiexec share: this process's place in the job, and
// (mpi_test_main.cpp) a main() that starts MPI, runs every test on every rank and exits
// non-zero when any rank failed, so mpiexec's exit status, and ctest's verdict, is the
// job's. Link mpi_test_main.cpp into such a test instead of gtest_main.
#pragma once

#include <mpi.h>

namespace towers::testing {

/// This process's rank in MPI_COMM_WORLD.
inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

/// The job's size: MPI_COMM_WORLD's.
inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

}  // namespace towers::testing
