// SPDX-License-Identifier: MIT
#include "harness/rank_check.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/hash.hpp"
#include "mpi/mpi_check.hpp"
#include "runtime/backend.hpp"

namespace towers {

RankParameterCheck::RankParameterCheck(Tower& tower, std::size_t count, const CheckFlags& flags,
                                       int steps, const MpiJob& job, Watchdog& watchdog)
    : tower_(tower), count_(count), flags_(flags), steps_(steps), job_(job), watchdog_(watchdog) {
  if (flags.inject_divergence >= 0 && job.size() < 2) {
    throw UsageError("--inject-divergence needs at least two ranks to compare; "
                     "start the program with mpirun -n 2 or more.");
  }
  staging_ = tower.device->allocate_pinned(count * sizeof(float));
}

void RankParameterCheck::after_step(int step, float* params) {
  Stream& stream = *tower_.stream;
  if (step == flags_.inject_divergence && job_.rank() == job_.size() - 1) {
    float* value = staging_.as<float>();  // one ulp on the first parameter
    stream.copy(value, params, sizeof(float), "read param");
    stream.synchronize();
    *value = std::nextafter(*value, INFINITY);
    stream.copy(params, value, sizeof(float), "inject divergence");
    stream.synchronize();
    std::fprintf(stderr, "inject-divergence: changed one parameter of rank %d after step %d\n",
                 job_.rank(), step);
  }
  if ((step + 1) % flags_.check_every == 0 || step == steps_ - 1) compare(step, params);
}

void RankParameterCheck::compare(int step, float* params) {
  Stream& stream = *tower_.stream;
  stream.copy(staging_.data(), params, count_ * sizeof(float), "copy params to check");
  stream.synchronize();  // the host reads the copy next
  const std::uint64_t mine = base::fnv1a64(staging_.data(), count_ * sizeof(float));
  std::vector<std::uint64_t> sums(job_.size());
  {
    Watchdog::Scope waiting(watchdog_, "parameter check", step);
    MPI_CHECK(MPI_Allgather(&mine, 1, MPI_UINT64_T, sums.data(), 1, MPI_UINT64_T, job_.comm()));
  }
  // Every rank gathered the same sums, so every rank builds the same message.
  const std::string differ = divergence_message(sums, step, "rank");
  if (!differ.empty()) throw std::runtime_error(differ);
  ++checks_;
}

}  // namespace towers
