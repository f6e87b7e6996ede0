// SPDX-License-Identifier: MIT
// The seam between the portable runtime and the CUDA backend.
//
// src/runtime/cuda/ implements these with the CUDA runtime; a build without CUDA links
// src/runtime/cuda_unavailable.cpp instead, where the probe answers 0 and the factories
// throw. This is how the backend is chosen at run time without #ifdefs.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "runtime/device.hpp"
#include "trace/trace.hpp"

namespace towers {

/// Number of CUDA devices (0 without a driver). Call once; see cuda_device_count().
int probe_cuda_device_count();

/// Devices 0..count-1 of the CUDA backend, tracing into `trace`.
std::vector<std::unique_ptr<Device>> make_cuda_devices(int count, Trace& trace);

/// Launches a kernel on ctx.stream that spins for `ms` milliseconds of GPU time.
void launch_cuda_busy_kernel(const CudaLaunchContext& ctx, double ms);

/// Memory every GPU and the host can read and write (mapped pinned memory) for the
/// rendezvous; `ints` counters, zeroed. Freed by the returned Buffer.
Buffer allocate_cuda_shared_flags(int ints);

/// Launches participant `slot` of a rendezvous of `participants` on ctx.stream.
/// `flags` points to memory from allocate_cuda_shared_flags(2 * participants + 3).
void launch_cuda_rendezvous(const CudaLaunchContext& ctx, int* flags, int participants, int slot,
                            std::chrono::milliseconds timeout);

/// Launches, on ctx.stream, the start of a new round of that rendezvous: the round that
/// ends is folded into the closed rounds' lowest, then present, seen and met are cleared.
void launch_cuda_rendezvous_reset(const CudaLaunchContext& ctx, int* flags, int participants);

}  // namespace towers
