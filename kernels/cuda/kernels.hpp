// SPDX-License-Identifier: MIT
// CUDA launchers: every op of kernels/math as a kernel launched on a stream.
//
// Each function is the CUDA twin of the host loop of the same name in
// kernels/host/kernels.hpp, with a CudaLaunchContext in front: it launches one kernel on
// ctx.stream (a grid-stride loop calling the same math function per element) and
// returns without waiting. Pointers are device memory of ctx.device, which is current.
// A launch error throws std::runtime_error (see base/cuda/check.hpp); in a build
// without CUDA every launcher throws std::logic_error.
//
// This header includes no CUDA header, so backend-agnostic code (src/model/ops.cpp) can
// call the launchers from a plain C++ file.
#pragma once

#include "kernels/math/elementwise.hpp"
#include "kernels/math/lrn.hpp"
#include "kernels/math/shape.hpp"
#include "runtime/stream.hpp"

namespace towers::cuda {

using math::Index;

/// Launches host::im2col on the GPU.
void im2col(const CudaLaunchContext& ctx, const float* x, math::Nhwc s, int k, float* col);
/// Launches host::col2im on the GPU.
void col2im(const CudaLaunchContext& ctx, const float* dcol, math::Nhwc s, int k, float* dx);

/// Launches host::bias_add on the GPU.
void bias_add(const CudaLaunchContext& ctx, int rows, int channels, const float* bias, float* y);
/// Launches host::relu_forward on the GPU.
void relu_forward(const CudaLaunchContext& ctx, Index n, const float* x, float* y);
/// Launches host::relu_backward on the GPU.
void relu_backward(const CudaLaunchContext& ctx, Index n, const float* y, const float* dy,
                   float* dx);
/// Launches host::fill on the GPU.
void fill(const CudaLaunchContext& ctx, Index n, float value, float* x);
/// Launches host::sgd_update on the GPU.
void sgd_update(const CudaLaunchContext& ctx, Index n, float learning_rate, const float* grad,
                float* w);
/// Launches host::ema_update on the GPU.
void ema_update(const CudaLaunchContext& ctx, Index n, float decay, const float* var,
                float* shadow);
/// Launches host::momentum_update on the GPU.
void momentum_update(const CudaLaunchContext& ctx, Index n, float learning_rate, float momentum,
                     const float* grad, float* velocity, float* w);
/// Launches host::adam_update on the GPU.
void adam_update(const CudaLaunchContext& ctx, Index n, math::AdamScalars s, const float* grad,
                 float* m, float* v, float* w);

/// Launches host::max_pool_forward on the GPU.
void max_pool_forward(const CudaLaunchContext& ctx, const float* x, math::Nhwc in, float* y,
                      int* argmax);
/// Launches host::max_pool_backward on the GPU.
void max_pool_backward(const CudaLaunchContext& ctx, const float* dy, const int* argmax,
                       math::Nhwc in, float* dx);

/// Launches host::lrn_forward on the GPU.
void lrn_forward(const CudaLaunchContext& ctx, int pixels, int channels, math::LrnParams p,
                 const float* x, float* y, float* scale);
/// Launches host::lrn_backward on the GPU.
void lrn_backward(const CudaLaunchContext& ctx, int pixels, int channels, math::LrnParams p,
                  const float* x, const float* y, const float* scale, const float* dy,
                  float* dx);

/// Launches host::softmax_cross_entropy on the GPU (one thread per example).
void softmax_cross_entropy(const CudaLaunchContext& ctx, int batch, int classes,
                           const float* logits, const int* labels, float* loss,
                           float* dlogits);
/// Launches host::top1_correct on the GPU (one thread per example).
void top1_correct(const CudaLaunchContext& ctx, int batch, int classes, const float* logits,
                  const int* labels, float* correct);

}  // namespace towers::cuda
