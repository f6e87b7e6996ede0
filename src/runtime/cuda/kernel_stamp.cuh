// SPDX-License-Identifier: MIT
// The device side of the kernel stamps (runtime/kernel_stamps.hpp): the GPU's nanosecond
// clock and the two calls that bracket a stamped kernel's body. %globaltimer ticks in
// nanoseconds for the whole device, so readings from different blocks and streams of one
// GPU compare directly. Used by the runtime's probe kernels (probe_kernels.cu) and, through
// kernels/cuda/launch.cuh, by every towers kernel. Only .cu files include this header.
#pragma once

#include <cuda_runtime.h>

#include "runtime/kernel_stamps.hpp"
#include "runtime/stream.hpp"

namespace towers::cuda {

/// %globaltimer now, in nanoseconds.
__device__ inline unsigned long long globaltimer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

/// The stamp for the next kernel the op launches; {nullptr, 0} (no stamping) when untraced.
inline KernelStamp next_stamp(const CudaLaunchContext& ctx) {
  return ctx.stamps != nullptr ? ctx.stamps->next() : KernelStamp{};
}

/// First thing in a stamped kernel: each block offers its start time; the earliest stays.
/// (The record keeps ~start with atomicMax, so that all-zero memory means "none yet".)
__device__ inline void stamp_begin(KernelStamp stamp) {
  if (stamp.record != nullptr && threadIdx.x == 0) {
    atomicMax(&stamp.record->first_inverted, ~globaltimer_ns());
  }
}

/// Last thing in a stamped kernel, reached by every thread of the block. The block that
/// finishes last writes the kernel's {start, end, seq} and resets the scratch words for the
/// record's next owner. Two atomics per block (its start, its count): a few microseconds at
/// most for the largest grids (kMaxBlocks), nothing when the op is not traced.
__device__ inline void stamp_end(KernelStamp stamp) {
  if (stamp.record == nullptr) return;  // the same for every thread: no divergent barrier
  __syncthreads();                      // every thread of this block has done its elements
  if (threadIdx.x != 0) return;
  KernelStampRecord* r = stamp.record;
  __threadfence();  // this block's start offer is in before it counts itself done
  const unsigned long long done = atomicAdd(&r->blocks_done, 1ull) + 1;
  if (done != gridDim.x) return;
  // Every other block has counted itself, so every start offer is in, and now is after
  // every block's end.
  const unsigned long long end = globaltimer_ns();
  const unsigned long long start = ~atomicExch(&r->first_inverted, 0ull);
  r->start_ns = start;
  r->blocks_done = 0;
  r->end_ns = end;
  r->check = stamp_check(start, end, stamp.seq);  // a torn copy of the record fails it
  __threadfence();  // start and end before seq: a record with the right seq is complete
  *reinterpret_cast<volatile unsigned long long*>(&r->seq) = stamp.seq;
}

}  // namespace towers::cuda
