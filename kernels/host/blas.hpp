// SPDX-License-Identifier: MIT
// Host BLAS: the matrix and vector products of the ops, served by CBLAS (OpenBLAS).
//
// All matrices are row-major, as in the rest of towers. Each call runs on the calling
// thread: by default OpenBLAS gets one thread per call, because on the host backend each
// simulated device already has its own worker thread per stream, and an OpenBLAS pool
// per call would make N devices fight over the same cores and blur the trace's picture
// of what runs in parallel. set_blas_threads() changes that for the whole process.
#pragma once

namespace towers::host {

/// Sets how many threads OpenBLAS uses per call, for the whole process (default 1).
void set_blas_threads(int threads);

/// c[m, n] = alpha * op(a) * op(b) + beta * c, row-major; op(a) is [m, k], op(b) is [k, n],
/// op(x) = x^T when the matching trans flag is set. lda, ldb, ldc: row strides as stored.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

/// y = alpha * op(a) * x + beta * y for row-major a[m, n] (row stride lda); op(a) = a^T
/// when trans is set, so x has n (or m) elements and y has m (or n).
void gemv(bool trans, int m, int n, float alpha, const float* a, int lda, const float* x,
          float beta, float* y);

/// *result = sum_i x[i] * y[i] over n elements (x == y gives a sum of squares).
void dot(int n, const float* x, const float* y, float* result);

/// y[n] += alpha * x.
void axpy(int n, float alpha, const float* x, float* y);

/// x[n] *= alpha.
void scal(int n, float alpha, float* x);

}  // namespace towers::host
