// SPDX-License-Identifier: MIT
// The functions behind CUDA_CHECK, CUBLAS_CHECK and NCCL_CHECK.
#include "base/cuda/check.hpp"

#include <sstream>
#include <string>
#include <stdexcept>
#include <string_view>

namespace towers::cuda {
namespace {

// __FILE__ is an absolute path under CMake; report it relative to the source tree
// (TOWERS_SOURCE_ROOT, set by src/base/CMakeLists.txt) so messages read "kernels/...".
// A compiler cache that rewrites paths relative to the build folder (ccache with
// CCACHE_BASEDIR) gives "../kernels/..." instead: the leading "../" go too.
std::string_view relative_path(std::string_view file) {
  constexpr std::string_view root = TOWERS_SOURCE_ROOT "/";
  if (file.substr(0, root.size()) == root) file.remove_prefix(root.size());
  while (file.substr(0, 3) == "../") file.remove_prefix(3);
  return file;
}

std::string describe(std::string_view library, const char* message, const char* expression,
                     const char* file, int line) {
  std::ostringstream text;
  text << "towers: " << library << " error at " << relative_path(file) << ":" << line << ": "
       << message << "\n  in " << expression;
  return text.str();
}

[[noreturn]] void fail(std::string_view library, const char* message, const char* expression,
                       const char* file, int line) {
  throw std::runtime_error(describe(library, message, expression, file, line));
}

}  // namespace

bool is_stream_capture_error(cudaError_t status) {
  switch (status) {
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorCapturedEvent:
    case cudaErrorStreamCaptureWrongThread:
      return true;
    default:
      return false;
  }
}

void check_cuda(cudaError_t status, const char* expression, const char* file, int line) {
  if (status != cudaSuccess) {
    throw CudaError(status, describe("CUDA", cudaGetErrorString(status), expression, file, line));
  }
}

void check_cublas(cublasStatus_t status, const char* expression, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    fail("cuBLAS", cublasGetStatusString(status), expression, file, line);
  }
}

void check_nccl(ncclResult_t status, const char* expression, const char* file, int line) {
  if (status != ncclSuccess) fail("NCCL", ncclGetErrorString(status), expression, file, line);
}

}  // namespace towers::cuda
