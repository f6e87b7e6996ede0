// SPDX-License-Identifier: MIT
// main() of the tests that ctest runs under mpiexec (see mpi_test_main.hpp).
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // Errors come back as codes (MPI_CHECK throws, naming the call) instead of aborting the
  // job, so a test that expects a refusal can see it and the others still report.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;  // every rank's verdict: one failed rank fails the job
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
