// SPDX-License-Identifier: MIT
// Launch shape shared by every towers kernel: a grid-stride loop over n elements.
//
// Kernels loop `for (Index i = first_index(); i < n; i += index_stride())`, so any grid
// size covers any n; grid_size() picks enough blocks to fill a GPU without launching
// millions of them for large tensors. Indices are 64-bit (math::Index): with 32-bit ones
// a count past 2^31 - 1 wraps, and `i += index_stride()` can overflow near the end of a
// large tensor even when n fits. Only .cu files include this header.
//
// Every kernel also stamps its own run when the op is traced (runtime/kernel_stamps.hpp):
// its first parameter is a KernelStamp from next_stamp(ctx), and its body is bracketed by
// stamp_begin() and stamp_end(), called by every thread (stamp_end synchronizes the block).
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/globaltimer.cuh"
#include "kernels/math/shape.hpp"
#include "runtime/kernel_stamps.hpp"
#include "runtime/stream.hpp"

namespace towers::cuda {

using math::Index;

/// Threads per block for every elementwise kernel.
inline constexpr int kBlockSize = 256;
/// Upper bound on blocks per launch; the grid-stride loop covers the rest.
inline constexpr int kMaxBlocks = 4096;

/// Blocks to launch for n elements (n > 0): one per kBlockSize elements, at most kMaxBlocks.
inline int grid_size(Index n) {
  const Index blocks = (n + kBlockSize - 1) / kBlockSize;
  return blocks < kMaxBlocks ? static_cast<int>(blocks) : kMaxBlocks;
}

/// The stream of a launch context, as the type kernel launches take.
inline cudaStream_t stream_of(const CudaLaunchContext& ctx) {
  return static_cast<cudaStream_t>(ctx.stream);
}

/// This thread's first element in a grid-stride loop.
__device__ inline Index first_index() {
  return static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
}
/// Distance between a thread's elements in a grid-stride loop: all threads of the grid.
__device__ inline Index index_stride() { return static_cast<Index>(gridDim.x) * blockDim.x; }

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
  r->start_ns = ~atomicExch(&r->first_inverted, 0ull);
  r->blocks_done = 0;
  r->end_ns = end;
  __threadfence();  // start and end before seq: a record with the right seq is complete
  *reinterpret_cast<volatile unsigned long long*>(&r->seq) = stamp.seq;
}

}  // namespace towers::cuda
