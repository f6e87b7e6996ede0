// SPDX-License-Identifier: MIT
// CUDA kernels for im2col and col2im (kernels/math/conv.hpp).
#include "base/cuda/check.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/math/conv.hpp"

namespace towers::cuda {
namespace {

__global__ void im2col_kernel(KernelStamp stamp, Index n, const float* x, math::Nhwc s, int k,
                              float* col) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) col[i] = math::im2col(i, x, s, k);
  stamp_end(stamp);
}

__global__ void col2im_kernel(KernelStamp stamp, Index n, const float* dcol, math::Nhwc s, int k,
                              float* dx) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) dx[i] = math::col2im(i, dcol, s, k);
  stamp_end(stamp);
}

}  // namespace

void im2col(const CudaLaunchContext& ctx, const float* x, math::Nhwc s, int k, float* col) {
  const Index n = s.pixels() * math::im2col_columns(k, s.channels);  // col: [pixels, k*k*C]
  if (n == 0) return;
  im2col_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, x, s, k, col);
  CUDA_CHECK(cudaGetLastError());
}

void col2im(const CudaLaunchContext& ctx, const float* dcol, math::Nhwc s, int k, float* dx) {
  const Index n = s.size();  // dx: [batch, height, width, channels]
  if (n == 0) return;
  col2im_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, dcol, s, k,
                                                                 dx);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace towers::cuda
