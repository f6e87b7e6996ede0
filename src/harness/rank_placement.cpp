// SPDX-License-Identifier: MIT
#include "harness/rank_placement.hpp"

#include "runtime/backend.hpp"

namespace towers {

void place_one_tower_per_rank(TrainingFlags& flags, int rank, int local_rank,
                              const char* proc_dir) {
  // Before CUDA starts (resolve_backend below may start it): the process sees one GPU,
  // chosen here or already before MPI_Init (run_rank_program).
  const bool bind = show_only_gpu_of_local_rank(local_rank, proc_dir);
  const Backend backend = resolve_backend(flags.runtime.backend);
  if (!flags.runtime.devices && (backend == Backend::kHost || bind)) flags.runtime.devices = 1;
  flags.layout.towers = 1;
  flags.layout.first_index = rank;
  // Bound: the one visible GPU is device 0. Not bound: GPU (local rank mod GPUs seen).
  flags.layout.first_device = bind ? 0 : local_rank;
}

}  // namespace towers
