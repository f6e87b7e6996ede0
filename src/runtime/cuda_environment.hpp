// SPDX-License-Identifier: MIT
// The environment the cuda backend gives CUDA before its first call: what CUDA reads once,
// when it starts, and that the chapters depend on. Each is set only where the user has not
// set it (a user's own setting wins). Portable code, so that the host tests check it.
//
// CUDA_DEVICE_MAX_CONNECTIONS: the hardware work queues a GPU's streams are spread over
// (default 8). Each tower has its own stream, and chapter 6 a second one; with 8 queues,
// from 5 towers on one GPU tower i and tower i+4 share a queue, so one waits behind the
// other's kernels in queue order: a false serialization that makes the concurrency probe
// time out with correct code. 32, the most CUDA allows, gives 8 towers 16+ streams room.
//
// Module loading is left lazy (CUDA's default since 12.2): forcing EAGER loaded every kernel
// of cuBLAS(Lt) and NCCL into every process (seconds and hundreds of MB each). What lazy
// loading could break, a kernel that spins waiting for another whose first launch needs a
// context-wide synchronization, is avoided where it matters: the probe kernels are loaded
// when the devices are made (runtime/cuda/probe_kernels.cu), the probes run in step 1 after
// a warm-up step has launched every kernel of the step, a graph's kernels are loaded when
// it is instantiated, and NCCL loads its own kernels when its communicator is made.
#pragma once

#include <span>

namespace towers {

/// One variable of the environment the cuda backend sets.
struct CudaEnvironmentSetting {
  const char* name;   ///< e.g. "CUDA_DEVICE_MAX_CONNECTIONS"
  const char* value;  ///< set when the variable is unset
};

/// What apply_cuda_environment() sets (see the file comment for why).
std::span<const CudaEnvironmentSetting> cuda_environment();

/// Sets each of cuda_environment() that is not set already. Call before the first CUDA
/// call of the process (probe_cuda_device_count() does).
void apply_cuda_environment();

}  // namespace towers
