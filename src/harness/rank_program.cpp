// SPDX-License-Identifier: MIT
#include "harness/rank_program.hpp"

#include <cstdio>
#include <exception>
#include <optional>

#include "cli/options.hpp"
#include "runtime/backend.hpp"
#include "runtime/local_gpu.hpp"

namespace towers {

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

void add_fault_flags(CLI::App& app, FaultFlags& flags) {
  const std::string group = "Test hooks (make one rank fail on purpose)";
  // Checked as every number flag is: unchecked, `--fail-rank ''` read as 0 failed rank 0,
  // and `--fail-rank -2` quietly failed none.
  app.add_option("--fail-rank", flags.rank, "the rank that fails")->group(group)
      ->check(whole_number(0, 1000000, "(a rank of the job)"));
  app.add_option("--fail-at-step", flags.step, "the step at whose start it fails")->group(group)
      ->capture_default_str()->check(whole_number(0, 100000000));
  app.add_option("--fail-how", flags.how, "kill (SIGKILL itself), stall (stop answering), throw")
      ->group(group)->capture_default_str()
      ->check(CLI::IsMember({"kill", "stall", "throw"}));
}

}  // namespace towers
