// SPDX-License-Identifier: MIT
// CUDA kernels for max pooling (kernels/math/pool.hpp).
#include "base/cuda/check.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/math/pool.hpp"

namespace towers::cuda {
namespace {

__global__ void max_pool_forward_kernel(KernelStamp stamp, Index n, const float* x, math::Nhwc in,
                                        float* y, int* argmax) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) {
    const math::PoolMax m = math::max_pool_forward(i, x, in);
    y[i] = m.value;
    argmax[i] = m.index;
  }
  stamp_end(stamp);
}

__global__ void max_pool_backward_kernel(KernelStamp stamp, Index n, const float* dy,
                                         const int* argmax, math::Nhwc in, float* dx) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) {
    dx[i] = math::max_pool_backward(i, dy, argmax, in);
  }
  stamp_end(stamp);
}

}  // namespace

void max_pool_forward(const CudaLaunchContext& ctx, const float* x, math::Nhwc in, float* y,
                      int* argmax) {
  const Index n = math::max_pool_output_shape(in).size();  // y, argmax: [batch, oh, ow, C]
  if (n == 0) return;
  max_pool_forward_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, x,
                                                                           in, y, argmax);
  CUDA_CHECK(cudaGetLastError());
}

void max_pool_backward(const CudaLaunchContext& ctx, const float* dy, const int* argmax,
                       math::Nhwc in, float* dx) {
  const Index n = in.size();  // dx: [batch, height, width, C]
  if (n == 0) return;
  max_pool_backward_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, dy,
                                                                            argmax, in, dx);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace towers::cuda
