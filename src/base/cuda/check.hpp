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

#include <stdexcept>
#include <string>

namespace towers::cuda {

/// What CUDA_CHECK throws: a std::runtime_error that also keeps the CUDA error code, so
/// that a caller can tell one kind of failure from another (a call refused while a stream
/// is capturing a graph becomes a CaptureError in runtime/cuda/cuda_graph.cpp).
class CudaError : public std::runtime_error {
 public:
  /// An error `code` returned by a CUDA call, described by `message` (file:line, the call).
  CudaError(cudaError_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  /// The error the call returned.
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

/// True for the errors CUDA returns when a call is not allowed, or breaks, a stream
/// capture (cudaErrorStreamCapture*, cudaErrorCapturedEvent): a mistake in the captured
/// code, not a failure of the device.
bool is_stream_capture_error(cudaError_t status);

/// Throws CudaError (a std::runtime_error) describing `status` unless it is cudaSuccess.
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
