// SPDX-License-Identifier: MIT
// CUDA_CHECK, CUBLAS_CHECK, NCCL_CHECK: one check for every CUDA, cuBLAS and NCCL call.
//
// Wrap each call: `CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));`. On
// failure it throws std::runtime_error with the file, the line, the library's message
// and the call as written, e.g.
//
//   towers: CUDA error at kernels/cuda/elementwise.cu:42: invalid argument
//     in cudaGetLastError()
//
// The macros add only the text of the call, __FILE__ and __LINE__; the logic lives in
// the ordinary functions below (check.cpp). They never hide a return. Usable from .cu
// files and from plain .cpp files compiled by the host compiler; only code built with
// CUDA may include this header.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

namespace towers::cuda {

/// Throws std::runtime_error describing `status` unless it is cudaSuccess.
void check_cuda(cudaError_t status, const char* expression, const char* file, int line);
/// Throws std::runtime_error describing `status` unless it is CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t status, const char* expression, const char* file, int line);
/// Throws std::runtime_error describing `status` unless it is ncclSuccess.
void check_nccl(ncclResult_t status, const char* expression, const char* file, int line);

}  // namespace towers::cuda

/// Checks a CUDA runtime call; throws std::runtime_error naming it on failure.
#define CUDA_CHECK(expression) \
  ::towers::cuda::check_cuda((expression), #expression, __FILE__, __LINE__)
/// Checks a cuBLAS call; throws std::runtime_error naming it on failure.
#define CUBLAS_CHECK(expression) \
  ::towers::cuda::check_cublas((expression), #expression, __FILE__, __LINE__)
/// Checks an NCCL call; throws std::runtime_error naming it on failure.
#define NCCL_CHECK(expression) \
  ::towers::cuda::check_nccl((expression), #expression, __FILE__, __LINE__)
