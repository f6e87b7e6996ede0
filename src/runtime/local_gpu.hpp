// SPDX-License-Identifier: MIT
// Which GPU a process of an MPI job sees (chapters 5 and 6 under mpirun): one of its own.
//
// The usual launcher practice is followed: each process is shown only GPU (local rank),
// through CUDA_VISIBLE_DEVICES, so it opens one CUDA context instead of one per GPU (N ranks
// x N GPUs contexts, each hundreds of MB). CUDA reads that variable once, when it starts,
// and a CUDA-aware MPI may start CUDA inside MPI_Init (its CUDA transports look for GPUs
// there). So the choice is made before MPI_Init, from the local rank the launcher puts in
// the environment (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID, Slurm's
// SLURM_LOCALID), together with the rest of the CUDA environment (cuda_environment.hpp).
// Where the launcher already set CUDA_VISIBLE_DEVICES (a scheduler binding GPUs), that
// choice is kept. The GPUs are counted from the driver's /proc entries, which does not
// start CUDA; with more ranks on a machine than GPUs nothing is bound, and NCCL's own check
// (ranks sharing a GPU are refused by its UUID) says what to do. Portable code: the host
// tests check it. Introduced in chapter 5.
#pragma once

#include <optional>

namespace towers {

/// Where the NVIDIA driver lists its GPUs, one folder each.
inline constexpr const char* kDriverGpuFolder = "/proc/driver/nvidia/gpus";

/// GPUs the NVIDIA driver lists under `proc_dir`; 0 without the driver.
int driver_gpu_count(const char* proc_dir = kDriverGpuFolder);

/// This process's rank among the job's ranks on its machine, as the launcher's environment
/// says it before MPI starts; nothing when no known launcher started it.
std::optional<int> launcher_local_rank();

/// Shows this process only GPU `local_rank` (CUDA_VISIBLE_DEVICES), unless CUDA_VISIBLE_DEVICES
/// is set already or the machine has no such GPU. Returns whether this process sees only
/// the GPU of its local rank by this function's doing: now, or by an earlier call (the
/// variable then still holds what that call set). False: the launcher's choice stands, or
/// nothing is bound. Call before CUDA starts.
bool show_only_gpu_of_local_rank(int local_rank, const char* proc_dir = kDriverGpuFolder);

/// Before MPI_Init: the CUDA environment (apply_cuda_environment) and, when the launcher
/// says the local rank, show_only_gpu_of_local_rank(). See the file comment for why.
void prepare_cuda_before_mpi_init();

}  // namespace towers
