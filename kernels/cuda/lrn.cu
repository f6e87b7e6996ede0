// SPDX-License-Identifier: MIT
// CUDA kernels for local response normalization (kernels/math/lrn.hpp).
#include "base/cuda/check.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/math/lrn.hpp"

namespace towers::cuda {
namespace {

__global__ void lrn_forward_kernel(KernelStamp stamp, Index n, int channels, math::LrnParams p,
                                   const float* x, float* y, float* scale) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) {
    const math::LrnForward out = math::lrn_forward(i, x, channels, p);
    y[i] = out.y;
    scale[i] = out.scale;
  }
  stamp_end(stamp);
}

__global__ void lrn_backward_kernel(KernelStamp stamp, Index n, int channels, math::LrnParams p,
                                    const float* x, const float* y, const float* scale,
                                    const float* dy, float* dx) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) {
    dx[i] = math::lrn_backward(i, x, y, scale, dy, channels, p);
  }
  stamp_end(stamp);
}

}  // namespace

void lrn_forward(const CudaLaunchContext& ctx, int pixels, int channels, math::LrnParams p,
                 const float* x, float* y, float* scale) {
  const Index n = static_cast<Index>(pixels) * channels;  // x, y, scale: [pixels, channels]
  if (n == 0) return;
  lrn_forward_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, channels,
                                                                      p, x, y, scale);
  CUDA_CHECK(cudaGetLastError());
}

void lrn_backward(const CudaLaunchContext& ctx, int pixels, int channels, math::LrnParams p,
                  const float* x, const float* y, const float* scale, const float* dy,
                  float* dx) {
  const Index n = static_cast<Index>(pixels) * channels;
  if (n == 0) return;
  lrn_backward_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, channels,
                                                                       p, x, y, scale, dy, dx);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace towers::cuda
