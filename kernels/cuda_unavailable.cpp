// SPDX-License-Identifier: MIT
// The CUDA launchers in a build without CUDA (TOWERS_HAVE_CUDA OFF): each one throws.
//
// Backend-agnostic code (src/model/ops.cpp) names both halves of every op, so both must
// link. The runtime never calls the cuda half without a CUDA backend, so reaching one of
// these means a bug, hence std::logic_error.
#include <stdexcept>

#include "kernels/cuda/blas.hpp"
#include "kernels/cuda/kernels.hpp"

namespace towers::cuda {
namespace {

[[noreturn]] void unavailable() { throw std::logic_error("towers was built without CUDA"); }

}  // namespace

void im2col(const CudaLaunchContext&, const float*, math::Nhwc, int, float*) { unavailable(); }
void col2im(const CudaLaunchContext&, const float*, math::Nhwc, int, float*) { unavailable(); }
void bias_add(const CudaLaunchContext&, int, int, const float*, float*) { unavailable(); }
void relu_forward(const CudaLaunchContext&, Index, const float*, float*) { unavailable(); }
void relu_backward(const CudaLaunchContext&, Index, const float*, const float*, float*) {
  unavailable();
}
void fill(const CudaLaunchContext&, Index, float, float*) { unavailable(); }
void sgd_update(const CudaLaunchContext&, Index, float, const float*, float*) { unavailable(); }
void ema_update(const CudaLaunchContext&, Index, float, const float*, float*) { unavailable(); }
void momentum_update(const CudaLaunchContext&, Index, float, float, const float*, float*, float*) {
  unavailable();
}
void adam_update(const CudaLaunchContext&, Index, math::AdamScalars, const float*, float*, float*,
                 float*) {
  unavailable();
}
void max_pool_forward(const CudaLaunchContext&, const float*, math::Nhwc, float*, int*) {
  unavailable();
}
void max_pool_backward(const CudaLaunchContext&, const float*, const int*, math::Nhwc, float*) {
  unavailable();
}
void lrn_forward(const CudaLaunchContext&, int, int, math::LrnParams, const float*, float*,
                 float*) {
  unavailable();
}
void lrn_backward(const CudaLaunchContext&, int, int, math::LrnParams, const float*,
                  const float*, const float*, const float*, float*) {
  unavailable();
}
void softmax_cross_entropy(const CudaLaunchContext&, int, int, const float*, const int*, float*,
                           float*) {
  unavailable();
}
void top1_correct(const CudaLaunchContext&, int, int, const float*, const int*, float*) {
  unavailable();
}

void gemm(const CudaLaunchContext&, bool, bool, int, int, int, float, const float*, int,
          const float*, int, float, float*, int) {
  unavailable();
}
void gemv(const CudaLaunchContext&, bool, int, int, float, const float*, int, const float*, float,
          float*) {
  unavailable();
}
void dot(const CudaLaunchContext&, int, const float*, const float*, float*) { unavailable(); }
void axpy(const CudaLaunchContext&, int, float, const float*, float*) { unavailable(); }
void scal(const CudaLaunchContext&, int, float, float*) { unavailable(); }

}  // namespace towers::cuda
