// SPDX-License-Identifier: MIT
// Host BLAS through CBLAS (OpenBLAS), row-major.
#include "kernels/host/blas.hpp"

#include <cblas.h>

#include <mutex>

namespace towers::host {
namespace {

// OpenBLAS starts with one thread per core. We want one per call by default (see
// blas.hpp), set once before the first product; set_blas_threads() overrides it.
std::once_flag default_threads_once;

void apply_default_threads() {
  std::call_once(default_threads_once, [] { openblas_set_num_threads(1); });
}

CBLAS_TRANSPOSE to_cblas(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

}  // namespace

void set_blas_threads(int threads) {
  apply_default_threads();  // so that a later first product does not undo this call
  openblas_set_num_threads(threads);
}

void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  apply_default_threads();
  cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

void gemv(bool trans, int m, int n, float alpha, const float* a, int lda, const float* x,
          float beta, float* y) {
  apply_default_threads();
  cblas_sgemv(CblasRowMajor, to_cblas(trans), m, n, alpha, a, lda, x, 1, beta, y, 1);
}

void dot(int n, const float* x, const float* y, float* result) {
  apply_default_threads();
  *result = cblas_sdot(n, x, 1, y, 1);
}

void axpy(int n, float alpha, const float* x, float* y) {
  apply_default_threads();
  cblas_saxpy(n, alpha, x, 1, y, 1);
}

void scal(int n, float alpha, float* x) {
  apply_default_threads();
  cblas_sscal(n, alpha, x, 1);
}

}  // namespace towers::host
