// SPDX-License-Identifier: MIT
// What every op's math needs to be compiled twice: once by nvcc for the GPU, once by the
// host compiler for the host loops.
//
// TOWERS_HD marks a function as callable from both host and device code under nvcc, and
// expands to nothing under a host-only compiler, where the same functions are plain
// inline C++. This is the one #ifdef the kernels have; the backend is otherwise chosen at
// run time.
#pragma once

#ifdef __CUDACC__
/// `__host__ __device__` under nvcc; nothing under a host-only compiler.
#define TOWERS_HD __host__ __device__
#else
/// `__host__ __device__` under nvcc; nothing under a host-only compiler.
#define TOWERS_HD
#endif
