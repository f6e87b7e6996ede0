// SPDX-License-Identifier: MIT
// CUDA BLAS through cuBLAS. cuBLAS is column-major; towers is row-major. The mapping is
// explained where each product is called.
#include "kernels/cuda/blas.hpp"

#include <stdexcept>

#include "base/cuda/check.hpp"

namespace towers::cuda {
namespace {

cublasHandle_t handle_of(const CudaLaunchContext& ctx) {
  if (!ctx.blas) throw std::logic_error("a cuBLAS call on a launch context without a stream");
  return static_cast<cublasHandle_t>(ctx.blas());
}

cublasOperation_t to_cublas(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void gemm(const CudaLaunchContext& ctx, bool trans_a, bool trans_b, int m, int n, int k,
          float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
          int ldc) {
  // A row-major matrix with row stride ld, read as column-major with leading dimension
  // ld, is its transpose. So the row-major product C[m, n] = op(A) op(B) is, to cuBLAS,
  // the column-major product C^T[n, m] = op(B)^T op(A)^T: swap the operands (B first),
  // swap m and n, and keep each operand's own transpose flag and leading dimension.
  CUBLAS_CHECK(cublasSgemm(handle_of(ctx), to_cublas(trans_b), to_cublas(trans_a), n, m, k,
                           &alpha, b, ldb, a, lda, &beta, c, ldc));
}

void gemv(const CudaLaunchContext& ctx, bool trans, int m, int n, float alpha, const float* a,
          int lda, const float* x, float beta, float* y) {
  // Row-major A[m, n] is column-major A^T[n, m] (leading dimension lda). So op(A) = A is
  // A^T transposed (CUBLAS_OP_T on an n x m matrix) and op(A) = A^T is that matrix as is.
  CUBLAS_CHECK(cublasSgemv(handle_of(ctx), trans ? CUBLAS_OP_N : CUBLAS_OP_T, n, m, &alpha, a,
                           lda, x, 1, &beta, y, 1));
}

void dot(const CudaLaunchContext& ctx, int n, const float* x, const float* y, float* result) {
  // `result` is device memory: in device pointer mode cuBLAS writes it without copying
  // the value back to the host, so the call stays asynchronous. Restore the handle's
  // mode afterwards, because every other call passes alpha and beta as host pointers.
  cublasHandle_t handle = handle_of(ctx);
  cublasPointerMode_t previous;
  CUBLAS_CHECK(cublasGetPointerMode(handle, &previous));
  CUBLAS_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
  const cublasStatus_t status = cublasSdot(handle, n, x, 1, y, 1, result);
  CUBLAS_CHECK(cublasSetPointerMode(handle, previous));  // restore even when Sdot failed
  CUBLAS_CHECK(status);
}

void axpy(const CudaLaunchContext& ctx, int n, float alpha, const float* x, float* y) {
  CUBLAS_CHECK(cublasSaxpy(handle_of(ctx), n, &alpha, x, 1, y, 1));
}

void scal(const CudaLaunchContext& ctx, int n, float alpha, float* x) {
  CUBLAS_CHECK(cublasSscal(handle_of(ctx), n, &alpha, x, 1));
}

}  // namespace towers::cuda
