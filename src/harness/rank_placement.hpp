// SPDX-License-Identifier: MIT
// Where a rank trains (chapters 5 and 6 under mpirun): one tower per process, tower
// index = rank (so it reads the rank's shard), on one device of its own.
//
// On GPUs the usual launcher practice is followed: each process is shown only its own GPU,
// GPU (local rank), through CUDA_VISIBLE_DEVICES, set before CUDA starts. Otherwise every
// rank would open a context on every GPU of the machine (N ranks x N GPUs contexts, each
// hundreds of MB) and the runtime's synchronize() would wait on all of them every step.
// Where the launcher already set CUDA_VISIBLE_DEVICES (a scheduler binding GPUs), that
// choice is kept. The GPUs are counted from the driver's /proc entries, which does not
// start CUDA; with more ranks on a machine than GPUs nothing is bound, and NCCL's own check
// (ranks sharing a GPU are refused by its UUID) says what to do.
// On the host backend: one simulated device per rank. Introduced in chapter 5.
#pragma once

#include "harness/training.hpp"

namespace towers {

/// GPUs the NVIDIA driver lists under `proc_dir` (one folder each); 0 without the driver.
int driver_gpu_count(const char* proc_dir = "/proc/driver/nvidia/gpus");

/// Sets flags.runtime and flags.layout for one tower per rank as described above, for
/// rank `rank` whose rank among its machine's ranks is `local_rank` (MpiJob's). Call
/// before anything starts CUDA (backend resolution included).
void place_one_tower_per_rank(TrainingFlags& flags, int rank, int local_rank,
                              const char* proc_dir = "/proc/driver/nvidia/gpus");

}  // namespace towers
