// SPDX-License-Identifier: MIT
// TOWERS_HOST_CLONES: a host loop compiled for the widest vectors the CPU has.
//
// The build targets plain x86-64, whose vectors are SSE2's 4 floats, so that one binary
// runs on every x86-64 machine. A function marked TOWERS_HOST_CLONES is compiled three
// times, for AVX-512 (16 floats), AVX2 (8) and that baseline, and the first call picks
// the widest the CPU supports (GCC's and clang's function multi-versioning,
// target_clones). Only loops whose vector lanes are independent elements are marked: each
// element is computed by the same operations in the same order in every clone, so the
// results are the same bits. The library that uses it compiles with -ffp-contract=off,
// so that AVX2's and AVX-512's fused multiply-add never merges an a * b + c into one
// rounding (kernels/CMakeLists.txt). Used where it was measured to pay: LRN, whose
// square roots and divisions are compute, not memory traffic (lrn.cpp); the loops that
// only move data (col2im, pooling, ReLU) ran no faster.
//
// Elsewhere (another architecture, nvcc) it is empty, and the loop is compiled once. So
// it is under the sanitizers: the clone is picked by an ifunc resolver that runs before
// ThreadSanitizer's runtime is up, and a TSan build then crashes at start; the sanitizer
// builds check correctness, and the baseline loop gives the same bits.
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TOWERS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TOWERS_SANITIZED 1
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__CUDACC__) && !defined(TOWERS_SANITIZED)
#define TOWERS_HOST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TOWERS_HOST_CLONES
#endif
