// SPDX-License-Identifier: MIT
#include "runtime/cuda/cuda_device.hpp"

#include <cstdio>
#include <stdexcept>

#include "kernels/cuda/check.hpp"
#include "runtime/cuda/cuda_stream.hpp"

namespace towers {
namespace {

// Destructors must not throw: report a failed release and carry on.
void release(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "towers: %s failed: %s\n", what, cudaGetErrorString(status));
  }
}

}  // namespace

CudaDevice::CudaDevice(int ordinal, Trace& trace) : ordinal_(ordinal), trace_(trace) {
  CUDA_CHECK(cudaSetDevice(ordinal_));
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, ordinal_));
  name_ = "cuda:" + std::to_string(ordinal_) + " (" + properties.name + ")";
  // Trace times of this device are measured from this event, which completes "now" on
  // the host clock; so spans of all devices land on one time axis.
  auto epoch = std::make_shared<CudaEvent>(ordinal_, /*timing=*/true);
  CUDA_CHECK(cudaEventRecord(epoch->handle(), 0));
  CUDA_CHECK(cudaEventSynchronize(epoch->handle()));
  epoch_host_us_ = trace_.now_us();
  epoch_ = std::move(epoch);
}

CudaDevice::~CudaDevice() = default;

std::unique_ptr<Stream> CudaDevice::create_stream() {
  return std::make_unique<CudaStream>(*this, next_stream_index_++, trace_);
}

std::unique_ptr<Event> CudaDevice::create_event() {
  return std::make_unique<CudaEvent>(ordinal_, /*timing=*/true);
}

std::unique_ptr<Event> CudaDevice::create_wait_event() {
  return std::make_unique<CudaEvent>(ordinal_, /*timing=*/false);
}

Buffer CudaDevice::allocate(std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(ordinal_));
  void* data = nullptr;
  cudaError_t status = cudaMalloc(&data, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // out of memory is not sticky: clear it and report ours
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    throw OutOfMemory("out of memory on " + name_ + ": asked for " + std::to_string(bytes >> 20) +
                      " MiB with " + std::to_string(free_bytes >> 20) + " MiB free of " +
                      std::to_string(total_bytes >> 20) +
                      " MiB. Use fewer towers per device or a smaller batch size.");
  }
  CUDA_CHECK(status);
  const int ordinal = ordinal_;
  return Buffer(data, bytes, [ordinal](void* p) {
    release(cudaSetDevice(ordinal), "cudaSetDevice");
    release(cudaFree(p), "cudaFree");
  });
}

Buffer CudaDevice::allocate_pinned(std::size_t bytes) {
  void* data = nullptr;
  // Portable: pinned for every GPU, so any device's stream can copy it asynchronously.
  CUDA_CHECK(cudaHostAlloc(&data, bytes, cudaHostAllocPortable));
  return Buffer(data, bytes, [](void* p) { release(cudaFreeHost(p), "cudaFreeHost"); });
}

void CudaDevice::synchronize() {
  CUDA_CHECK(cudaSetDevice(ordinal_));
  CUDA_CHECK(cudaDeviceSynchronize());
}

CudaEvent::CudaEvent(int ordinal, bool timing) : ordinal_(ordinal), timing_(timing) {
  CUDA_CHECK(cudaSetDevice(ordinal_));
  CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

// Destroying an event whose record is still pending is allowed: CUDA releases it once
// the stream reaches it. No cudaSetDevice here: this may run on any thread.
CudaEvent::~CudaEvent() { release(cudaEventDestroy(event_), "cudaEventDestroy"); }

bool CudaEvent::query() {
  cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) return false;  // an answer, not an error
  CUDA_CHECK(status);
  return true;
}

void CudaEvent::synchronize() { CUDA_CHECK(cudaEventSynchronize(event_)); }

float CudaEvent::elapsed_ms_since(Event& start) {
  auto* cuda_start = dynamic_cast<CudaEvent*>(&start);
  if (cuda_start == nullptr) throw std::invalid_argument("elapsed_ms_since: events of two backends");
  if (!timing_ || !cuda_start->timing_) {
    throw std::logic_error("elapsed_ms_since: an event made by create_wait_event() has no timing");
  }
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, cuda_start->event_, event_));
  return ms;
}

}  // namespace towers
