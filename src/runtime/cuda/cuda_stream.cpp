// SPDX-License-Identifier: MIT
#include "runtime/cuda/cuda_stream.hpp"

#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <memory>
#include <string>

#include "kernels/cuda/check.hpp"

namespace towers {
namespace {

// The CUDA event pair around one traced op; destroyed once the trace has read it.
struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  ~EventPair() {
    if (start) (void)cudaEventDestroy(start);  // teardown: nothing useful to do on failure
    if (end) (void)cudaEventDestroy(end);
  }
};

}  // namespace

CudaStream::CudaStream(CudaDevice& device, int index, Trace& trace)
    : device_(device), index_(index), trace_(trace) {
  CUDA_CHECK(cudaSetDevice(device_.index()));
  // Non-blocking: never implicitly synchronizes with the legacy default stream.
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  // Drain, so buffers freed after the stream are no longer in use by it.
  cudaError_t status = cudaStreamSynchronize(stream_);
  if (status != cudaSuccess) {
    std::fprintf(stderr, "towers: error on %s stream %d was never synchronized: %s\n",
                 device_.name().c_str(), index_, cudaGetErrorString(status));
  }
  if (blas_) (void)cublasDestroy(blas_);
  (void)cudaStreamDestroy(stream_);
}

template <typename Enqueue>
void CudaStream::traced(std::string_view name, Enqueue&& enqueue) {
  CUDA_CHECK(cudaSetDevice(device_.index()));
  if (!trace_.enabled()) {
    enqueue();
    return;
  }
  auto pair = std::make_shared<EventPair>();
  CUDA_CHECK(cudaEventCreate(&pair->start));
  CUDA_CHECK(cudaEventCreate(&pair->end));
  const std::string label(name);
  CUDA_CHECK(cudaEventRecord(pair->start, stream_));
  nvtxRangePushA(label.c_str());  // Nsight Systems shows the same names as our trace
  enqueue();
  nvtxRangePop();
  CUDA_CHECK(cudaEventRecord(pair->end, stream_));
  TraceEvent span{device_.index(), index_, tower(), trace_.step(), label, 0, 0};
  cudaEvent_t epoch = device_.epoch();
  double epoch_us = device_.epoch_host_us();
  trace_.add_pending(std::move(span), [pair, epoch, epoch_us](TraceEvent& e) {
    float start_ms = 0, end_ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&start_ms, epoch, pair->start));
    CUDA_CHECK(cudaEventElapsedTime(&end_ms, epoch, pair->end));
    e.start_us = epoch_us + start_ms * 1000.0;
    e.end_us = epoch_us + end_ms * 1000.0;
  });
}

void CudaStream::launch(std::string_view name, HostWork /*host*/, CudaWork cuda) {
  trace_.count_host_enqueue();
  traced(name, [&] {
    if (blas_ == nullptr) {
      // Made on first use: chapters that never call cuBLAS never pay for a handle.
      CUBLAS_CHECK(cublasCreate(&blas_));
      CUBLAS_CHECK(cublasSetStream(blas_, stream_));
    }
    cuda(CudaLaunchContext{stream_, blas_, device_.index()});
  });
}

void CudaStream::copy(void* dst, const void* src, std::size_t bytes, std::string_view name) {
  trace_.count_host_enqueue();
  // cudaMemcpyDefault: unified addressing tells host, device and peer memory apart.
  traced(name, [&] { CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_)); });
}

void CudaStream::fill_zero(void* dst, std::size_t bytes, std::string_view name) {
  trace_.count_host_enqueue();
  traced(name, [&] { CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_)); });
}

void CudaStream::record(Event& event) {
  trace_.count_host_enqueue();
  CUDA_CHECK(cudaSetDevice(device_.index()));
  CUDA_CHECK(cudaEventRecord(dynamic_cast<CudaEvent&>(event).handle(), stream_));
}

void CudaStream::wait(Event& event) {
  trace_.count_host_enqueue();
  CUDA_CHECK(cudaSetDevice(device_.index()));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, dynamic_cast<CudaEvent&>(event).handle(), 0));
}

void CudaStream::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace towers
