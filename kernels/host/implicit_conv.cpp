// SPDX-License-Identifier: MIT
// Implicit GEMM for the SAME convolutions (implicit_conv.hpp): one kernel, a "panel" of
// up to 6 output rows, in three versions that compute the same chains of fused
// multiply-adds: AVX-512, AVX2 and portable.
#include "kernels/host/implicit_conv.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TOWERS_X86_KERNELS 1
#endif

namespace towers::host {
namespace {

using math::Index;
using math::Nhwc;

// Rows of a panel: 6 rows of 64 columns are 24 AVX-512 registers of sums, with 4 for the
// weight row and 1 for the broadcast input, of the 32 there are.
constexpr int kPanelRows = 6;

// One panel: rows r < `rows` and columns [col0, col1) of c, each element
//   c[r, j] = finish(sum over steps s of a[offsets[s] + r * row_stride] * b[s * ldb + j]),
// the sum one chain of fused multiply-adds in step order, from 0 or, when `accumulate`,
// from c's value. finish is max(sum + bias[j], 0) with a bias, else the sum itself.
struct Panel {
  const float* a;      // where the offsets start
  const int* offsets;  // per step: the first row's input value, relative to a
  int row_stride;      // from one row's input value to the next row's
  const float* b;      // per step a row of columns; step s's at b + s * ldb
  int ldb;
  int steps;
  float* c;            // row r at c + r * ldc
  int ldc;
  bool accumulate;
  const float* bias;   // nullptr: no bias and no ReLU
};

// The readable version, and the one for every CPU and shape: the same chain per element
// with std::fma (one rounding per step, as the vector instructions).
void panel_portable(const Panel& p, int rows, int col0, int col1) {
  for (int r = 0; r < rows; ++r) {
    for (int j = col0; j < col1; ++j) {
      float* c = p.c + static_cast<Index>(r) * p.ldc + j;
      float sum = p.accumulate ? *c : 0.0f;
      for (int s = 0; s < p.steps; ++s) {
        sum = std::fma(p.a[p.offsets[s] + r * p.row_stride], p.b[static_cast<Index>(s) * p.ldb + j],
                       sum);
      }
      if (p.bias != nullptr) {
        const float biased = sum + p.bias[j];
        sum = biased > 0.0f ? biased : 0.0f;
      }
      *c = sum;
    }
  }
}

#ifdef TOWERS_X86_KERNELS

// R rows by V vectors of 16 columns from col0, in registers for all the steps.
template <int R, int V>
__attribute__((target("avx512f"))) void panel_avx512(const Panel& p, int col0) {
  __m512 sum[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      sum[r][v] = p.accumulate ? _mm512_loadu_ps(p.c + r * p.ldc + col0 + 16 * v)
                               : _mm512_setzero_ps();
    }
  }
  const float* b = p.b + col0;
  for (int s = 0; s < p.steps; ++s, b += p.ldb) {
    __m512 column[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) column[v] = _mm512_loadu_ps(b + 16 * v);
    const float* a = p.a + p.offsets[s];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 value = _mm512_set1_ps(a[r * p.row_stride]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) sum[r][v] = _mm512_fmadd_ps(value, column[v], sum[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      __m512 out = sum[r][v];
      if (p.bias != nullptr) {
        // The ReLU as a select, `x > 0 ? x : 0` (0 for -0 and NaN too): a compare and a
        // masked move (GCC 12 warns about _mm512_max_ps's undefined filler).
        out = _mm512_add_ps(out, _mm512_loadu_ps(p.bias + col0 + 16 * v));
        out = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(out, _mm512_setzero_ps(), _CMP_GT_OQ), out);
      }
      _mm512_storeu_ps(p.c + r * p.ldc + col0 + 16 * v, out);
    }
  }
}

// R rows by V vectors of 8 columns from col0 (AVX2 has 16 registers: 6 x 2 sums).
template <int R, int V>
__attribute__((target("avx2,fma"))) void panel_avx2(const Panel& p, int col0) {
  __m256 sum[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      sum[r][v] = p.accumulate ? _mm256_loadu_ps(p.c + r * p.ldc + col0 + 8 * v)
                               : _mm256_setzero_ps();
    }
  }
  const float* b = p.b + col0;
  for (int s = 0; s < p.steps; ++s, b += p.ldb) {
    __m256 column[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) column[v] = _mm256_loadu_ps(b + 8 * v);
    const float* a = p.a + p.offsets[s];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 value = _mm256_broadcast_ss(a + r * p.row_stride);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) sum[r][v] = _mm256_fmadd_ps(value, column[v], sum[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      __m256 out = sum[r][v];
      if (p.bias != nullptr) {
        out = _mm256_add_ps(out, _mm256_loadu_ps(p.bias + col0 + 8 * v));
        out = _mm256_and_ps(out, _mm256_cmp_ps(out, _mm256_setzero_ps(), _CMP_GT_OQ));
      }
      _mm256_storeu_ps(p.c + r * p.ldc + col0 + 8 * v, out);
    }
  }
}

// The instantiation for `rows` (1 to kPanelRows) rows: the row count is a template
// argument, so that the sums stay in registers.
template <template <int, int> class Kernel, int V>
void by_rows(const Panel& p, int rows, int col0) {
  switch (rows) {
    case 1: Kernel<1, V>::run(p, col0); break;
    case 2: Kernel<2, V>::run(p, col0); break;
    case 3: Kernel<3, V>::run(p, col0); break;
    case 4: Kernel<4, V>::run(p, col0); break;
    case 5: Kernel<5, V>::run(p, col0); break;
    default: Kernel<6, V>::run(p, col0); break;
  }
}

template <int R, int V>
struct Avx512 {
  static void run(const Panel& p, int col0) { panel_avx512<R, V>(p, col0); }
};
template <int R, int V>
struct Avx2 {
  static void run(const Panel& p, int col0) { panel_avx2<R, V>(p, col0); }
};

// Columns [0, cols): 64 at a time, then the 16s left (cols is a multiple of 16).
void panel_by_avx512(const Panel& p, int rows, int cols) {
  int j = 0;
  for (; j + 64 <= cols; j += 64) by_rows<Avx512, 4>(p, rows, j);
  switch ((cols - j) / 16) {
    case 3: by_rows<Avx512, 3>(p, rows, j); break;
    case 2: by_rows<Avx512, 2>(p, rows, j); break;
    case 1: by_rows<Avx512, 1>(p, rows, j); break;
    default: break;
  }
}

// Columns [0, cols): 16 at a time, then 8 (cols is a multiple of 8).
void panel_by_avx2(const Panel& p, int rows, int cols) {
  int j = 0;
  for (; j + 16 <= cols; j += 16) by_rows<Avx2, 2>(p, rows, j);
  if (j < cols) by_rows<Avx2, 1>(p, rows, j);
}

bool cpu_has(ConvIsa isa) {
  switch (isa) {
    case ConvIsa::kAvx512: return __builtin_cpu_supports("avx512f");
    case ConvIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default: return true;
  }
}

#else

bool cpu_has(ConvIsa isa) { return isa == ConvIsa::kPortable; }

#endif

std::atomic<int> chosen_isa{-1};  // -1: not chosen yet, best_conv_isa()

// A panel of `rows` rows by `cols` columns (all of c's), with the widest loop that takes
// the shape.
void run_panel(const Panel& p, int rows, int cols) {
#ifdef TOWERS_X86_KERNELS
  const ConvIsa isa = conv_isa();
  if (isa == ConvIsa::kAvx512 && cols % 16 == 0) return panel_by_avx512(p, rows, cols);
  if (isa != ConvIsa::kPortable && cols % 8 == 0) return panel_by_avx2(p, rows, cols);
#endif
  panel_portable(p, rows, 0, cols);
}

}  // namespace

ConvIsa best_conv_isa() {
  for (ConvIsa isa : {ConvIsa::kAvx512, ConvIsa::kAvx2}) {
    if (cpu_has(isa)) return isa;
  }
  return ConvIsa::kPortable;
}

ConvIsa conv_isa() {
  const int isa = chosen_isa.load(std::memory_order_relaxed);
  return isa < 0 ? best_conv_isa() : static_cast<ConvIsa>(isa);
}

void set_conv_isa(ConvIsa isa) {
  if (cpu_has(isa)) chosen_isa.store(static_cast<int>(isa));
}

void conv_pad(const float* x, Nhwc s, int pad, float* x_pad, int n0, int n1) {
  const int wp = s.width + 2 * pad, hp = s.height + 2 * pad;
  const std::size_t row = static_cast<std::size_t>(s.width) * s.channels;  // floats
  const std::size_t padded_row = static_cast<std::size_t>(wp) * s.channels;
  for (int n = n0; n < n1; ++n) {
    float* out = x_pad + static_cast<std::size_t>(n) * hp * padded_row;
    std::memset(out, 0, pad * padded_row * sizeof(float));  // top border
    out += pad * padded_row;
    for (int y = 0; y < s.height; ++y, out += padded_row) {
      const std::size_t side = static_cast<std::size_t>(pad) * s.channels;
      std::memset(out, 0, side * sizeof(float));
      std::memcpy(out + side, x + s.offset(n, y, 0, 0), row * sizeof(float));
      std::memset(out + side + row, 0, side * sizeof(float));
    }
    std::memset(out, 0, pad * padded_row * sizeof(float));  // bottom border
  }
}

void conv_flip_weights(const float* w, int k, int in, int out, float* w_flip) {
  for (int kh = 0; kh < k; ++kh) {
    for (int kw = 0; kw < k; ++kw) {
      const float* from = w + static_cast<Index>((k - 1 - kh) * k + (k - 1 - kw)) * in * out;
      float* to = w_flip + static_cast<Index>(kh * k + kw) * out * in;
      for (int c = 0; c < in; ++c) {
        for (int o = 0; o < out; ++o) to[static_cast<Index>(o) * in + c] = from[c * out + o];
      }
    }
  }
}

void conv_forward_implicit(const float* x_pad, Nhwc s, int k, const float* w, int out,
                           const float* bias, float* y, int n0, int n1) {
  const int c = s.channels, wp = s.width + 2 * (k / 2), hp = s.height + 2 * (k / 2);
  // Step (kh, kw, ch), im2col's column order: kernel row kh's k*C values lie side by side
  // in x_pad, kh padded rows below the output pixel's top-left tap.
  std::vector<int> offsets(static_cast<std::size_t>(k) * k * c);
  for (int kh = 0; kh < k; ++kh) {
    for (int j = 0; j < k * c; ++j) offsets[static_cast<std::size_t>(kh) * k * c + j] = kh * wp * c + j;
  }
  for (int n = n0; n < n1; ++n) {
    for (int oy = 0; oy < s.height; ++oy) {
      for (int ox = 0; ox < s.width; ox += kPanelRows) {
        // Up to 6 neighbouring output pixels of one row: their taps are C floats apart.
        const Panel p{x_pad + ((static_cast<Index>(n) * hp + oy) * wp + ox) * c,
                      offsets.data(), c, w, out, k * k * c,
                      y + ((static_cast<Index>(n) * s.height + oy) * s.width + ox) * out, out,
                      false, bias};
        run_panel(p, std::min(kPanelRows, s.width - ox), out);
      }
    }
  }
}

void conv_weight_grad_implicit(const float* x_pad, Nhwc s, int k, const float* dy, int out,
                               float* dw, int r0, int r1) {
  const int c = s.channels, wp = s.width + 2 * (k / 2), hp = s.height + 2 * (k / 2);
  const int per_kernel_row = k * c;  // rows of dw per kernel row: (kw, ch), side by side in x_pad
  const int pixels = s.height * s.width;
  // Step p = output pixel (oy, ox) of an image: where its top-left tap lies in x_pad.
  std::vector<int> offsets(static_cast<std::size_t>(pixels));
  for (int oy = 0; oy < s.height; ++oy) {
    for (int ox = 0; ox < s.width; ++ox) offsets[static_cast<std::size_t>(oy) * s.width + ox] = (oy * wp + ox) * c;
  }
  // Image by image, so each image's x_pad and dy stay in cache for all the rows; each
  // panel's sums continue from where the previous image left them.
  for (int n = 0; n < s.batch; ++n) {
    for (int row = r0; row < r1;) {
      const int kh = row / per_kernel_row, q = row % per_kernel_row;
      const int rows = std::min({kPanelRows, r1 - row, per_kernel_row - q});
      const Panel p{x_pad + ((static_cast<Index>(n) * hp + kh) * wp) * c + q,
                    offsets.data(), 1, dy + static_cast<Index>(n) * pixels * out, out, pixels,
                    dw + static_cast<Index>(row) * out, out, n > 0, nullptr};
      run_panel(p, rows, out);
      row += rows;
    }
  }
}

}  // namespace towers::host
