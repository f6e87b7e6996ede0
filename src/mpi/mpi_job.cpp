// SPDX-License-Identifier: MIT
#include "mpi/mpi_job.hpp"

#include <cstdio>
#include <exception>

#include "mpi/mpi_check.hpp"

namespace towers {

MpiJob::MpiJob(int* argc, char*** argv) {
  int provided = 0;
  MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  // From here on a failing call returns its code instead of killing the job unexplained.
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (provided < MPI_THREAD_MULTIPLE) {
    throw MpiError("this MPI library does not support MPI_THREAD_MULTIPLE, which chapter 5 "
                   "needs (the all-reduce runs on a stream's thread). Use OpenMPI 4 or newer.");
  }
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  // The ranks that can share memory are the ranks of this machine.
  MPI_Comm local = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  MPI_CHECK(MPI_Comm_size(local, &local_size_));
  MPI_CHECK(MPI_Comm_free(&local));
}

MpiJob::~MpiJob() { (void)MPI_Finalize(); }  // nothing useful to do if it fails at exit

void MpiJob::abort(const std::string& cause, int code) const {
  std::fprintf(stderr, "towers: rank %d of %d: %s\n", rank_, size_, cause.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; if it ever did, this rank still ends
}


}  // namespace towers
