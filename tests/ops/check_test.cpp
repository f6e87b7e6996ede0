// SPDX-License-Identifier: MIT
// CUDA_CHECK and friends (base/cuda/check.hpp) report the file relative to the
// source tree, the line, the library's message and the call. Built only with CUDA; needs
// no GPU (error strings come from the libraries themselves).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "base/cuda/check.hpp"

namespace towers {
namespace {

TEST(CudaCheck, SuccessDoesNotThrow) {
  EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  EXPECT_NO_THROW(NCCL_CHECK(ncclSuccess));
}

TEST(CudaCheck, MessageNamesFileLineErrorAndCall) {
  std::string message;
  const int line = __LINE__ + 2;  // the CUDA_CHECK line
  try {
    CUDA_CHECK(cudaErrorInvalidValue);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "towers: CUDA error at tests/ops/check_test.cpp:" + std::to_string(line) +
                         ": invalid argument\n  in cudaErrorInvalidValue");
}

TEST(CudaCheck, CublasAndNcclMessagesNameTheirLibrary) {
  try {
    CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED);
    ADD_FAILURE() << "CUBLAS_CHECK did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("towers: cuBLAS error at tests/ops/check_test.cpp:"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("in CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos);
  }
  EXPECT_THROW(NCCL_CHECK(ncclInvalidArgument), std::runtime_error);
}

// A failed CUDA call keeps its code, so that capture_graph() can tell a call refused while
// capturing (turned into the documented CaptureError) from a failure of the device.
TEST(CudaCheck, KeepsTheCodeAndKnowsTheCaptureErrors) {
  try {
    CUDA_CHECK(cudaErrorStreamCaptureUnsupported);
    ADD_FAILURE() << "CUDA_CHECK did not throw";
  } catch (const cuda::CudaError& e) {
    EXPECT_EQ(e.code(), cudaErrorStreamCaptureUnsupported);
    EXPECT_NE(std::string(e.what()).find("in cudaErrorStreamCaptureUnsupported"), std::string::npos);
  }
  for (cudaError_t capture : {cudaErrorStreamCaptureUnsupported, cudaErrorStreamCaptureInvalidated,
                              cudaErrorStreamCaptureUnjoined, cudaErrorStreamCaptureIsolation,
                              cudaErrorStreamCaptureImplicit, cudaErrorCapturedEvent,
                              cudaErrorStreamCaptureWrongThread, cudaErrorStreamCaptureMerge,
                              cudaErrorStreamCaptureUnmatched}) {
    EXPECT_TRUE(cuda::is_stream_capture_error(capture)) << cudaGetErrorName(capture);
  }
  for (cudaError_t other : {cudaSuccess, cudaErrorInvalidValue, cudaErrorMemoryAllocation,
                            cudaErrorLaunchFailure, cudaErrorNotReady}) {
    EXPECT_FALSE(cuda::is_stream_capture_error(other)) << cudaGetErrorName(other);
  }
}

}  // namespace
}  // namespace towers
