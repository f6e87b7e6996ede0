// SPDX-License-Identifier: MIT
// CUDA BLAS: the twins of kernels/host/blas.hpp, served by cuBLAS on ctx.blas() (the
// stream's handle, made on its first GEMM).
//
// Same arguments and row-major meaning as the host functions, with a CudaLaunchContext in
// front; each enqueues on the stream the cuBLAS handle is bound to and returns without
// waiting. Pointers are device memory, including dot's result. Errors throw
// std::runtime_error naming the failed call; in a build without CUDA every function
// throws std::logic_error.
#pragma once

#include "runtime/stream.hpp"

namespace towers::cuda {

/// Row-major c = alpha * op(a) * op(b) + beta * c on the GPU; see host::gemm.
void gemm(const CudaLaunchContext& ctx, bool trans_a, bool trans_b, int m, int n, int k,
          float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
          int ldc);
/// Row-major y = alpha * op(a) * x + beta * y on the GPU; see host::gemv.
void gemv(const CudaLaunchContext& ctx, bool trans, int m, int n, float alpha, const float* a,
          int lda, const float* x, float beta, float* y);
/// *result = x . y on the GPU; `result` is device memory.
void dot(const CudaLaunchContext& ctx, int n, const float* x, const float* y, float* result);
/// y += alpha * x on the GPU.
void axpy(const CudaLaunchContext& ctx, int n, float alpha, const float* x, float* y);
/// x *= alpha on the GPU.
void scal(const CudaLaunchContext& ctx, int n, float alpha, float* x);

}  // namespace towers::cuda
