// SPDX-License-Identifier: MIT
// Stands in for allreduce_nccl_ranks.cpp in builds without CUDA.
#include "parallel/allreduce_mpi.hpp"
#include "runtime/backend.hpp"

namespace towers {

std::unique_ptr<RankAllReduce> make_nccl_rank_allreduce(Device&, const MpiJob&, Watchdog&) {
  throw UsageError("--allreduce nccl: this build has no CUDA. Use --allreduce mpi or ring.");
}

}  // namespace towers
