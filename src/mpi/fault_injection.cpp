// SPDX-License-Identifier: MIT
#include "mpi/fault_injection.hpp"

#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <thread>


namespace towers {

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
