// SPDX-License-Identifier: MIT
// MPI_CHECK: one check for every MPI call, as CUDA_CHECK is for CUDA.
//
//   MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, comm));
//   // towers: MPI error at src/parallel/allreduce_mpi.cpp:40: MPI_ERR_TRUNCATE: message
//   //   truncated in MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, comm)
//
// MPI reports errors by return code only once the communicator's error handler is
// MPI_ERRORS_RETURN (MpiJob sets it); with the default, MPI_ERRORS_ARE_FATAL, the library
// kills the job itself before the check could say where. Introduced in chapter 5.
#pragma once

#include <stdexcept>

namespace towers {

/// An MPI call failed; what() names the call, file, line and MPI's own error string.
class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws MpiError unless `code` is MPI_SUCCESS. Use through MPI_CHECK.
void check_mpi(int code, const char* expression, const char* file, int line);

}  // namespace towers

#define MPI_CHECK(expression) ::towers::check_mpi((expression), #expression, __FILE__, __LINE__)
