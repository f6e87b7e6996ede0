// SPDX-License-Identifier: MIT
// Launch shape shared by every towers kernel: a grid-stride loop over n elements.
//
// Kernels loop `for (int i = first_index(); i < n; i += index_stride())`, so any grid
// size covers any n; grid_size() picks enough blocks to fill a GPU without launching
// millions of them for large tensors. Only .cu files include this header.
#pragma once

#include <cuda_runtime.h>

#include "runtime/stream.hpp"

namespace towers::cuda {

/// Threads per block for every elementwise kernel.
inline constexpr int kBlockSize = 256;
/// Upper bound on blocks per launch; the grid-stride loop covers the rest.
inline constexpr int kMaxBlocks = 4096;

/// Blocks to launch for n elements (n > 0): one per kBlockSize elements, at most kMaxBlocks.
inline int grid_size(int n) {
  const int blocks = (n + kBlockSize - 1) / kBlockSize;
  return blocks < kMaxBlocks ? blocks : kMaxBlocks;
}

/// The stream of a launch context, as the type kernel launches take.
inline cudaStream_t stream_of(const CudaLaunchContext& ctx) {
  return static_cast<cudaStream_t>(ctx.stream);
}

/// This thread's first element in a grid-stride loop.
__device__ inline int first_index() { return blockIdx.x * blockDim.x + threadIdx.x; }
/// Distance between a thread's elements in a grid-stride loop: all threads of the grid.
__device__ inline int index_stride() { return gridDim.x * blockDim.x; }

}  // namespace towers::cuda
