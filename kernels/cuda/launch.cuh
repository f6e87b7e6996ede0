// SPDX-License-Identifier: MIT
// Launch shape shared by every towers kernel: a grid-stride loop over n elements.
//
// Kernels loop `for (Index i = first_index(); i < n; i += index_stride())`, so any grid
// size covers any n; grid_size() picks enough blocks to fill a GPU without launching
// millions of them for large tensors. Indices are 64-bit (math::Index): with 32-bit ones
// a count past 2^31 - 1 wraps, and `i += index_stride()` can overflow near the end of a
// large tensor even when n fits. Only .cu files include this header.
//
// Every kernel also stamps its own run when the op is traced (runtime/cuda/kernel_stamp.cuh):
// its first parameter is a KernelStamp from next_stamp(ctx), and its body is bracketed by
// stamp_begin() and stamp_end(), called by every thread (stamp_end synchronizes the block).
#pragma once

#include <cuda_runtime.h>

#include "kernels/math/shape.hpp"
#include "runtime/cuda/kernel_stamp.cuh"  // next_stamp, stamp_begin, stamp_end
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

}  // namespace towers::cuda
