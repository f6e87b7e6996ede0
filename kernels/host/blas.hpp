// SPDX-License-Identifier: MIT
// Host BLAS: the matrix and vector products of the ops, served by CBLAS (OpenBLAS).
//
// All matrices are row-major, as in the rest of towers. OpenBLAS always runs with one
// thread per call. gemm and gemv use more cores the way every host op does
// (parallel.hpp): they split the rows of their result into op_threads() parts and make
// one single-threaded BLAS call per part. It is faster where it matters: on the 2-core
// development machine OpenBLAS's own threads took 116 ms for the products of one
// training step at batch 128, two single-threaded halves 91 ms (the products there have
// 64 columns, which OpenBLAS's threading splits badly). And one setting now governs
// every host op, so N devices with one thread each never oversubscribe the cores.
// A row of c is computed from the same row of op(a) whatever the split; a BLAS may still
// pick another kernel for a call with fewer rows, so the last bits of a product may
// depend on the thread count (on the development machine they did not).
#pragma once

namespace towers::host {

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
