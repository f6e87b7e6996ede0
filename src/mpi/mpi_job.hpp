// SPDX-License-Identifier: MIT
// MpiJob: this process's place in an MPI job — chapter 5's "one process per device".
//
// Made once, first thing in main (it calls MPI_Init_thread and, when destroyed,
// MPI_Finalize). Started by `mpirun -n N`, the process is one of N ranks; started alone it
// is rank 0 of 1, the same program. It sets MPI_ERRORS_RETURN on MPI_COMM_WORLD, so a
// failed call returns a code that MPI_CHECK turns into an exception naming the call, and
// it knows the ranks that share this machine (MPI_Comm_split_type SHARED), so a rank can
// pick a GPU by its local rank.
//
// MPI_THREAD_MULTIPLE is asked for: on the host backend the all-reduce runs on a stream's
// worker thread and the watchdog may abort from its own thread.
// Introduced in chapter 5; harness/rank_program.hpp runs a program of ranks around it.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

namespace towers {

/// This process's rank in the job, and the job's size.
class MpiJob {
 public:
  /// MPI_Init_thread; throws MpiError when MPI cannot give MPI_THREAD_MULTIPLE.
  MpiJob(int* argc, char*** argv);
  /// MPI_Finalize.
  ~MpiJob();
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;

  /// The communicator of every rank (MPI_COMM_WORLD), errors returned, not fatal.
  MPI_Comm comm() const { return MPI_COMM_WORLD; }
  /// This rank, 0..size()-1.
  int rank() const { return rank_; }
  /// How many ranks the job has.
  int size() const { return size_; }
  /// This rank among the ranks on its machine (OMPI_COMM_WORLD_LOCAL_RANK), 0-based.
  int local_rank() const { return local_rank_; }
  /// How many ranks run on this machine.
  int local_size() const { return local_size_; }

  /// Prints "towers: rank R of N: <cause>" to stderr and ends every rank with MPI_Abort
  /// (exit code `code`). Safe from any thread.
  [[noreturn]] void abort(const std::string& cause, int code = 1) const;

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

}  // namespace towers
