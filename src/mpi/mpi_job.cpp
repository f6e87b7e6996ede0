// SPDX-License-Identifier: MIT
#include "mpi/mpi_job.hpp"

#include <cstdio>
#include <exception>
#include <optional>

#include "cli/options.hpp"
#include "mpi/mpi_check.hpp"
#include "runtime/backend.hpp"
#include "runtime/local_gpu.hpp"

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

int run_rank_program(CLI::App& app, int argc, char** argv,
                     const std::function<int(MpiJob&)>& body) {
  int code = 0;
  // Before MPI_Init: a CUDA-aware MPI may start CUDA inside it, and CUDA reads
  // CUDA_VISIBLE_DEVICES and CUDA_DEVICE_MAX_CONNECTIONS only when it starts, so this
  // rank's GPU and the CUDA environment are set first (runtime/local_gpu.hpp).
  prepare_cuda_before_mpi_init();
  try {
    MpiJob job(&argc, &argv);
    // Rank 0 alone logs: the others' stdout goes nowhere. Errors still reach stderr.
    if (job.rank() != 0 && !std::freopen("/dev/null", "w", stdout)) {
      job.abort("cannot silence stdout on /dev/null");
    }
    try {
      // Every rank parses the same flags and fails the same way: rank 0 says so. A flag's
      // own check may throw UsageError too (--backend cdua): a usage error, exit 2, as in
      // the one-process programs, not "towers: error" and 1.
      if (const std::optional<int> status = parse_flags(app, argc, argv, job.rank() == 0)) {
        return *status;
      }
      code = body(job);
    } catch (const UsageError& e) {
      // Flags and machine are the same on every rank, so every rank refuses alike; a rank
      // that did not would wait in its next collective until the watchdog ends the job.
      if (job.rank() == 0) std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    } catch (const std::exception& e) {
      job.abort(error_text(e));
    }
  } catch (const std::exception& e) {  // MPI itself failed to start or to finish
    std::fprintf(stderr, "towers: error: %s\n", e.what());
    return 1;
  }
  return code;
}

}  // namespace towers
