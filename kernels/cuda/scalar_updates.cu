// SPDX-License-Identifier: MIT
// CUDA kernels for kernels/cuda/scalar_updates.hpp.
#include "base/cuda/check.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/scalar_updates.hpp"
#include "kernels/math/elementwise.hpp"

namespace towers::cuda {
namespace {

__global__ void sgd_update_at_kernel(KernelStamp stamp, int n, const float* learning_rate,
                                     const float* grad, float* w) {
  stamp_begin(stamp);
  const float lr = *learning_rate;  // read when the kernel runs, not when it was captured
  for (int i = first_index(); i < n; i += index_stride()) w[i] = math::sgd_update(i, w, grad, lr);
  stamp_end(stamp);
}

__global__ void ema_update_at_kernel(KernelStamp stamp, int n, const float* decay, const float* var,
                                     float* shadow) {
  stamp_begin(stamp);
  const float d = *decay;
  for (int i = first_index(); i < n; i += index_stride()) {
    shadow[i] = math::ema_update(i, shadow, var, d);
  }
  stamp_end(stamp);
}

}  // namespace

void sgd_update_at(const CudaLaunchContext& ctx, int n, const float* learning_rate,
                   const float* grad, float* w) {
  if (n == 0) return;
  sgd_update_at_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n,
                                                                        learning_rate, grad, w);
  CUDA_CHECK(cudaGetLastError());
}

void ema_update_at(const CudaLaunchContext& ctx, int n, const float* decay, const float* var,
                   float* shadow) {
  if (n == 0) return;
  ema_update_at_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, decay,
                                                                        var, shadow);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace towers::cuda
