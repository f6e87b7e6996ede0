// SPDX-License-Identifier: MIT
#include "mpi/fault_injection.hpp"

#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "cli/options.hpp"  // whole_number

namespace towers {

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

void maybe_fail(const FaultFlags& flags, const MpiJob& job, int step) {
  if (flags.rank != job.rank() || flags.step != step) return;
  std::fprintf(stderr, "fail-rank: rank %d fails (%s) at step %d\n", job.rank(), flags.how.c_str(), step);
  std::fflush(stderr);
  if (flags.how == "kill") std::raise(SIGKILL);
  if (flags.how == "stall") {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  throw std::runtime_error("fail-rank: rank " + std::to_string(job.rank()) +
                           " threw at step " + std::to_string(step) + " (--fail-how throw)");
}

}  // namespace towers
