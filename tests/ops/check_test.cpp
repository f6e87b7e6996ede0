// SPDX-License-Identifier: MIT
// CUDA_CHECK and friends (kernels/cuda/check.hpp) report the file relative to the
// source tree, the line, the library's message and the call. Built only with CUDA; needs
// no GPU (error strings come from the libraries themselves).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/check.hpp"

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

}  // namespace
}  // namespace towers
