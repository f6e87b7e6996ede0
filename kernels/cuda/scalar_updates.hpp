// SPDX-License-Identifier: MIT
// sgd_update and ema_update with their scalar read from device memory at run time.
//
// A captured graph (chapter 7) replays its kernels with the arguments they were captured
// with, so a learning rate passed by value would stay the one of the step that was
// captured. These twins of cuda::sgd_update / cuda::ema_update read the scalar from a
// device buffer that the host refills before each launch; the arithmetic is the same
// math:: function, so the results are bit-identical to the by-value kernels.
#pragma once

#include "runtime/stream.hpp"

namespace towers::cuda {

/// w[n] -= *learning_rate * grad[n]; learning_rate points to device memory.
void sgd_update_at(const CudaLaunchContext& ctx, int n, const float* learning_rate,
                   const float* grad, float* w);
/// shadow[n] -= (1 - *decay) * (shadow - var); decay points to device memory.
void ema_update_at(const CudaLaunchContext& ctx, int n, const float* decay, const float* var,
                   float* shadow);

}  // namespace towers::cuda
