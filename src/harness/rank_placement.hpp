// SPDX-License-Identifier: MIT
// Where a rank trains (chapters 5 and 6 under mpirun): one tower per process, tower
// index = rank (so it reads the rank's shard), on one device of its own.
//
// On GPUs each process is shown only its own GPU, GPU (local rank), through
// CUDA_VISIBLE_DEVICES (runtime/local_gpu.hpp says why and when: run_rank_program has
// already chosen it before MPI_Init, from the launcher's environment; this asks again
// with MPI's local rank, for launchers that do not say it). A launcher's own
// CUDA_VISIBLE_DEVICES is kept. On the host backend: one simulated device per rank.
// Introduced in chapter 5.
#pragma once

#include "harness/training.hpp"
#include "runtime/local_gpu.hpp"

namespace towers {

/// Sets flags.runtime and flags.layout for one tower per rank as described above, for
/// rank `rank` whose rank among its machine's ranks is `local_rank` (MpiJob's). Call
/// before anything starts CUDA (backend resolution included).
void place_one_tower_per_rank(TrainingFlags& flags, int rank, int local_rank,
                              const char* proc_dir = kDriverGpuFolder);

}  // namespace towers
