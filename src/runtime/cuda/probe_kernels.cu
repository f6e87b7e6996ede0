// SPDX-License-Identifier: MIT
// The two probe kernels of the runtime: a busy kernel of fixed duration (chapter 0) and
// the rendezvous participant. Both are one thread that watches the GPU's nanosecond
// clock, so they are bounded in time whatever else runs.
#include <cuda_runtime.h>

#include "base/cuda/check.hpp"
#include "runtime/cuda/cuda_device.hpp"
#include "runtime/cuda/kernel_stamp.cuh"
#include "runtime/cuda_backend.hpp"

namespace towers {
namespace {

using cuda::globaltimer_ns;
using cuda::next_stamp;
using cuda::stamp_begin;
using cuda::stamp_end;

__global__ void busy_kernel(KernelStamp stamp, unsigned long long duration_ns) {
  stamp_begin(stamp);
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < duration_ns) {
  }
  stamp_end(stamp);
}

// flags (mapped pinned host memory, visible to every GPU):
//   present[n]: 1 while participant i runs, 2 after it left;
//   seen[n]:    most participants i saw running at once, this round;
//   met[1]:     set by whoever saw all n, so the others stop waiting;
//   fewest[1]:  the lowest "most seen" of the rounds closed by a reset;
//   rounds[1]:  how many rounds were closed.
__global__ void rendezvous_kernel(KernelStamp stamp, volatile int* flags, int n, int slot,
                                  unsigned long long timeout_ns) {
  stamp_begin(stamp);
  volatile int* present = flags;
  volatile int* seen = flags + n;
  volatile int* met = flags + 2 * n;
  present[slot] = 1;
  __threadfence_system();
  const unsigned long long start = globaltimer_ns();
  int most = 0;
  while (*met == 0 && globaltimer_ns() - start < timeout_ns) {
    int running = 0;
    for (int i = 0; i < n; ++i) running += (present[i] == 1);
    most = running > most ? running : most;
    if (running == n) *met = 1;
  }
  if (*met != 0 && most < n) most = n;  // someone saw everyone, including this one
  seen[slot] = most;
  present[slot] = 2;
  __threadfence_system();
  stamp_end(stamp);
}

// A new round (one thread, run after every probe of the last round has left): folds the
// round's result into fewest/rounds, then clears present, seen and met.
__global__ void rendezvous_reset_kernel(KernelStamp stamp, volatile int* flags, int n) {
  stamp_begin(stamp);
  volatile int* present = flags;
  volatile int* seen = flags + n;
  volatile int* met = flags + 2 * n;
  volatile int* fewest = flags + 2 * n + 1;
  volatile int* rounds = flags + 2 * n + 2;
  int most = 0;
  for (int i = 0; i < n; ++i) most = seen[i] > most ? seen[i] : most;
  if (most > 0) {  // the round that ends here ran
    *fewest = (*rounds == 0 || most < *fewest) ? most : *fewest;
    *rounds = *rounds + 1;
  }
  for (int i = 0; i < n; ++i) {
    present[i] = 0;
    seen[i] = 0;
  }
  *met = 0;
  __threadfence_system();
  stamp_end(stamp);
}

// A reading of the clock, for the anchor that maps a device's stamps onto the trace, and
// the clock's tick: the smallest of its next 8 changes (about 8 us at the common 1 us;
// bounded by 1 ms should the clock stand still).
__global__ void read_clock_kernel(unsigned long long* reading, unsigned long long* tick) {
  const unsigned long long first = globaltimer_ns();
  unsigned long long previous = first, smallest = 0;
  int changes = 0;
  while (changes < 8 && previous - first < 1000000ull) {
    const unsigned long long now = globaltimer_ns();
    if (now != previous) {
      const unsigned long long change = now - previous;
      smallest = (smallest == 0 || change < smallest) ? change : smallest;
      previous = now;
      ++changes;
    }
  }
  *reading = previous;  // the latest reading: closest to the event the host times after it
  *tick = smallest;
}

}  // namespace

void launch_cuda_read_clock(cudaStream_t stream, unsigned long long* reading,
                            unsigned long long* tick) {
  read_clock_kernel<<<1, 1, 0, stream>>>(reading, tick);
  CUDA_CHECK(cudaGetLastError());
}

void preload_cuda_probe_kernels(int ordinal) {
  // cudaFuncGetAttributes loads a kernel's module into the current context (CUDA's advice
  // for kernels that wait on each other under lazy loading).
  CUDA_CHECK(cudaSetDevice(ordinal));
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, busy_kernel));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, rendezvous_kernel));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, rendezvous_reset_kernel));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, read_clock_kernel));
}

void launch_cuda_busy_kernel(const CudaLaunchContext& ctx, double ms) {
  busy_kernel<<<1, 1, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
      next_stamp(ctx), static_cast<unsigned long long>(ms * 1e6));
  CUDA_CHECK(cudaGetLastError());
}

void launch_cuda_rendezvous(const CudaLaunchContext& ctx, int* flags, int participants, int slot,
                            std::chrono::milliseconds timeout) {
  rendezvous_kernel<<<1, 1, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
      next_stamp(ctx), flags, participants, slot,
      static_cast<unsigned long long>(timeout.count()) * 1000000ull);
  CUDA_CHECK(cudaGetLastError());
}

void launch_cuda_rendezvous_reset(const CudaLaunchContext& ctx, int* flags, int participants) {
  rendezvous_reset_kernel<<<1, 1, 0, static_cast<cudaStream_t>(ctx.stream)>>>(next_stamp(ctx), flags,
                                                                               participants);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace towers
