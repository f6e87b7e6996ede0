// SPDX-License-Identifier: MIT
// The NCCL all-reduce in a build without CUDA: a clear error instead of a missing symbol,
// the way src/runtime/cuda_unavailable.cpp stands in for the CUDA backend.
#include "parallel/allreduce.hpp"

namespace towers {

std::unique_ptr<AllReduce> make_nccl_allreduce(Runtime&, std::span<const int>, Reduction) {
  throw UsageError(
      "this build of towers has no CUDA, so no NCCL all-reduce; use the ring all-reduce.");
}

std::unique_ptr<ShardedCollectives> make_nccl_collectives(Runtime&, std::span<const int>,
                                                          Reduction) {
  throw UsageError(
      "this build of towers has no CUDA, so no NCCL reduce-scatter or all-gather; use the ring.");
}

}  // namespace towers
