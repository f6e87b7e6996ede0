// SPDX-License-Identifier: MIT
// Host BLAS through CBLAS (OpenBLAS), row-major; the large products split over the op
// threads of parallel.hpp.
#include "kernels/host/blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <mutex>

#include "kernels/host/openblas_core.hpp"
#include "kernels/host/parallel.hpp"

namespace towers::host {
namespace {

// OpenBLAS starts with one thread per core and would split every call over them. Each
// call here gets one thread, always: the threads come from parallel_for instead (see
// blas.hpp for why), set once before the first product. That is also when a program
// that computes on the host learns whether OpenBLAS chose kernels below its CPU's
// (openblas_core.hpp): one line on stderr, once, if so.
std::once_flag single_thread_once;

void apply_single_thread() {
  std::call_once(single_thread_once, [] {
    openblas_set_num_threads(1);
    warn_once_if_openblas_core_is_below_the_cpu();
  });
}

CBLAS_TRANSPOSE to_cblas(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

// A part of a product gets at least this many multiply-adds: below it, waking a helper
// costs more than it saves.
constexpr std::int64_t kMinMultiplyAddsPerPart = std::int64_t{1} << 20;

// Rows per part so that a part of a product with `per_row` multiply-adds per row gets at
// least kMinMultiplyAddsPerPart.
std::int64_t min_rows(std::int64_t per_row) {
  return std::max<std::int64_t>(1, kMinMultiplyAddsPerPart / std::max<std::int64_t>(per_row, 1));
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  apply_single_thread();
  // Rows [r0, r1) of c need rows [r0, r1) of op(a): rows of a as stored, or its columns
  // when a is transposed. Every part multiplies by all of op(b).
  const std::int64_t per_row = static_cast<std::int64_t>(n) * k;
  parallel_for(m, min_rows(per_row), [=](std::int64_t r0, std::int64_t r1) {
    const float* a_rows = trans_a ? a + r0 : a + r0 * lda;
    cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), static_cast<int>(r1 - r0),
                n, k, alpha, a_rows, lda, b, ldb, beta, c + r0 * ldc, ldc);
  });
}

void gemv(bool trans, int m, int n, float alpha, const float* a, int lda, const float* x,
          float beta, float* y) {
  apply_single_thread();
  // y has n elements when a is transposed (one per column of a), else m (one per row);
  // each part computes a range of them from the matching columns or rows of a.
  const int outputs = trans ? n : m;
  const std::int64_t per_output = trans ? m : n;
  parallel_for(outputs, min_rows(per_output), [=](std::int64_t j0, std::int64_t j1) {
    const float* a_part = trans ? a + j0 : a + j0 * lda;
    const int rows = trans ? m : static_cast<int>(j1 - j0);
    const int columns = trans ? static_cast<int>(j1 - j0) : n;
    cblas_sgemv(CblasRowMajor, to_cblas(trans), rows, columns, alpha, a_part, lda, x, 1, beta,
                y + j0, 1);
  });
}

void dot(int n, const float* x, const float* y, float* result) {
  apply_single_thread();
  *result = cblas_sdot(n, x, 1, y, 1);
}

void axpy(int n, float alpha, const float* x, float* y) {
  apply_single_thread();
  cblas_saxpy(n, alpha, x, 1, y, 1);
}

void scal(int n, float alpha, float* x) {
  apply_single_thread();
  cblas_sscal(n, alpha, x, 1);
}

}  // namespace towers::host
