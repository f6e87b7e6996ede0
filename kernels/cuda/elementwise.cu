// SPDX-License-Identifier: MIT
// CUDA kernels for the elementwise ops (kernels/math/elementwise.hpp).
#include "base/cuda/check.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/math/elementwise.hpp"

namespace towers::cuda {
namespace {

__global__ void bias_add_kernel(KernelStamp stamp, Index n, int channels, const float* bias,
                                float* y) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) y[i] = math::bias_add(i, y, bias, channels);
  stamp_end(stamp);
}

__global__ void relu_forward_kernel(KernelStamp stamp, Index n, const float* x, float* y) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) y[i] = math::relu_forward(i, x);
  stamp_end(stamp);
}

__global__ void relu_backward_kernel(KernelStamp stamp, Index n, const float* y, const float* dy,
                                     float* dx) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) dx[i] = math::relu_backward(i, y, dy);
  stamp_end(stamp);
}

__global__ void fill_kernel(KernelStamp stamp, Index n, float value, float* x) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) x[i] = value;
  stamp_end(stamp);
}

__global__ void sgd_update_kernel(KernelStamp stamp, Index n, float learning_rate,
                                  const float* grad, float* w) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) {
    w[i] = math::sgd_update(i, w, grad, learning_rate);
  }
  stamp_end(stamp);
}

__global__ void ema_update_kernel(KernelStamp stamp, Index n, float decay, const float* var,
                                  float* shadow) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) {
    shadow[i] = math::ema_update(i, shadow, var, decay);
  }
  stamp_end(stamp);
}

// Chapter 8's optimizers: one thread reads and writes element i of every buffer, so the
// state and the parameter update in one pass over memory, as the host loop does.
__global__ void momentum_update_kernel(KernelStamp stamp, Index n, float learning_rate,
                                       float momentum, const float* grad, float* velocity,
                                       float* w) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) {
    velocity[i] = math::momentum_velocity(i, velocity, grad, momentum);
    w[i] = math::sgd_update(i, w, velocity, learning_rate);
  }
  stamp_end(stamp);
}

__global__ void adam_update_kernel(KernelStamp stamp, Index n, math::AdamScalars s,
                                   const float* grad, float* m, float* v, float* w) {
  stamp_begin(stamp);
  for (Index i = first_index(); i < n; i += index_stride()) {
    m[i] = math::adam_first_moment(i, m, grad, s.beta1);
    v[i] = math::adam_second_moment(i, v, grad, s.beta2);
    w[i] = math::adam_step(i, w, m, v, s.step_size, s.epsilon);
  }
  stamp_end(stamp);
}

}  // namespace

void bias_add(const CudaLaunchContext& ctx, int rows, int channels, const float* bias, float* y) {
  const Index n = static_cast<Index>(rows) * channels;  // y: [rows, channels]
  if (n == 0) return;
  bias_add_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, channels,
                                                                   bias, y);
  CUDA_CHECK(cudaGetLastError());
}

void relu_forward(const CudaLaunchContext& ctx, Index n, const float* x, float* y) {
  if (n == 0) return;
  relu_forward_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, x, y);
  CUDA_CHECK(cudaGetLastError());
}

void relu_backward(const CudaLaunchContext& ctx, Index n, const float* y, const float* dy,
                   float* dx) {
  if (n == 0) return;
  relu_backward_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, y, dy,
                                                                        dx);
  CUDA_CHECK(cudaGetLastError());
}

void fill(const CudaLaunchContext& ctx, Index n, float value, float* x) {
  if (n == 0) return;
  fill_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, value, x);
  CUDA_CHECK(cudaGetLastError());
}

void sgd_update(const CudaLaunchContext& ctx, Index n, float learning_rate, const float* grad,
                float* w) {
  if (n == 0) return;
  sgd_update_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n,
                                                                     learning_rate, grad, w);
  CUDA_CHECK(cudaGetLastError());
}

void ema_update(const CudaLaunchContext& ctx, Index n, float decay, const float* var,
                float* shadow) {
  if (n == 0) return;
  ema_update_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, decay, var,
                                                                     shadow);
  CUDA_CHECK(cudaGetLastError());
}

void momentum_update(const CudaLaunchContext& ctx, Index n, float learning_rate, float momentum,
                     const float* grad, float* velocity, float* w) {
  if (n == 0) return;
  momentum_update_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(
      next_stamp(ctx), n, learning_rate, momentum, grad, velocity, w);
  CUDA_CHECK(cudaGetLastError());
}

void adam_update(const CudaLaunchContext& ctx, Index n, math::AdamScalars s, const float* grad,
                 float* m, float* v, float* w) {
  if (n == 0) return;
  adam_update_kernel<<<grid_size(n), kBlockSize, 0, stream_of(ctx)>>>(next_stamp(ctx), n, s, grad,
                                                                      m, v, w);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace towers::cuda
