// SPDX-License-Identifier: MIT
#include "runtime/cuda/cuda_device.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "base/cuda/check.hpp"
#include "runtime/cuda/cuda_capture.hpp"
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
  make_kernel_stamps();
}

CudaDevice::~CudaDevice() {
  // The ring itself may outlive the device (a resolver still reading it); the ledger does not.
  memory().remove(MemoryCategory::kWorkspace, stamp_bytes_);
}

void CudaDevice::make_kernel_stamps() {
  CUDA_CHECK(cudaSetDevice(ordinal_));
  const std::size_t bytes = kKernelStampRecords * sizeof(KernelStampRecord);
  void* raw = nullptr;
  CUDA_CHECK(cudaMalloc(&raw, bytes));
  memory().add(MemoryCategory::kWorkspace, bytes);  // the runtime's own, in the ledger too
  stamp_bytes_ = bytes;
  const int ordinal = ordinal_;
  // Owned by the copy function below, so the records live as long as any resolver that
  // may still read them, also past this device.
  std::shared_ptr<void> memory(raw, [ordinal](void* p) {
    release(cudaSetDevice(ordinal), "cudaSetDevice");
    release(cudaFree(p), "cudaFree");
  });
  auto* records = static_cast<KernelStampRecord*>(raw);

  // The anchor: a one-thread kernel reads %globaltimer on a private stream, then an event
  // completes. The event's time since epoch() puts the reading on the trace's axis, late
  // by the microsecond or two between the read and the event.
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CudaEvent after(ordinal_, /*timing=*/true);
  unsigned long long anchor_ns = 0, tick_ns = 0;
  CUDA_CHECK(cudaMemsetAsync(raw, 0, bytes, stream));  // all-zero records: "none yet"
  launch_cuda_read_clock(stream, &records[0].start_ns, &records[0].end_ns);
  CUDA_CHECK(cudaEventRecord(after.handle(), stream));
  CUDA_CHECK(cudaEventSynchronize(after.handle()));
  CUDA_CHECK(cudaMemcpy(&anchor_ns, &records[0].start_ns, sizeof anchor_ns,
                        cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&tick_ns, &records[0].end_ns, sizeof tick_ns, cudaMemcpyDeviceToHost));
  // Record 0 lent two words to the readings: all-zero again before the ring hands it out.
  CUDA_CHECK(cudaMemsetAsync(raw, 0, sizeof(KernelStampRecord), stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  release(cudaStreamDestroy(stream), "cudaStreamDestroy");
  stamp_clock_ = {anchor_ns, epoch_host_us_ + after.elapsed_ms_since(*epoch_) * 1000.0,
                  tick_ns};

  stamps_ = std::make_shared<KernelStampBuffer>(
      records, kKernelStampRecords,
      [ordinal, memory, records](KernelStampRecord* dst, std::size_t first, std::size_t count) {
        // Plain cudaMemcpy: on the legacy stream, which our non-blocking streams never wait
        // for, so the copy does not wait for work still running either.
        CUDA_CHECK(cudaSetDevice(ordinal));
        CUDA_CHECK(cudaMemcpy(dst, records + first, count * sizeof(KernelStampRecord),
                              cudaMemcpyDeviceToHost));
      });
}

std::unique_ptr<Stream> CudaDevice::create_stream() {
  return std::make_unique<CudaStream>(*this, next_stream_index_++, trace_);
}

std::unique_ptr<Event> CudaDevice::create_event() {
  return std::make_unique<CudaEvent>(ordinal_, /*timing=*/true);
}

std::unique_ptr<Event> CudaDevice::create_wait_event() {
  return std::make_unique<CudaEvent>(ordinal_, /*timing=*/false);
}

Buffer CudaDevice::allocate_memory(std::size_t bytes, MemoryCategory category) {
  refuse_if_capturing_cuda("Device::allocate on " + name_);
  CUDA_CHECK(cudaSetDevice(ordinal_));
  void* data = nullptr;
  cudaError_t status = cudaMalloc(&data, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // out of memory is not sticky: clear it and report ours
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    throw OutOfMemory(out_of_memory_fact(
        name_ + " (cudaErrorMemoryAllocation)", bytes, category,
        mib_text(free_bytes) + " free of " + mib_text(total_bytes) +
            " (another process may hold some: nvidia-smi)"));
  }
  CUDA_CHECK(status);
  const int ordinal = ordinal_;
  return Buffer(data, bytes, [ordinal](void* p) {
    release(cudaSetDevice(ordinal), "cudaSetDevice");
    release(cudaFree(p), "cudaFree");
  });
}

Buffer CudaDevice::allocate_pinned(std::size_t bytes) {
  refuse_if_capturing_cuda("Device::allocate_pinned on " + name_);
  void* data = nullptr;
  // Portable: pinned for every GPU, so any device's stream can copy it asynchronously.
  CUDA_CHECK(cudaHostAlloc(&data, bytes, cudaHostAllocPortable));
  return Buffer(data, bytes, [](void* p) { release(cudaFreeHost(p), "cudaFreeHost"); });
}

void CudaDevice::synchronize() {
  refuse_if_capturing_cuda("Device::synchronize on " + name_);
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
  refuse_if_capturing_cuda("Event::query");
  cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) return false;  // an answer, not an error
  CUDA_CHECK(status);
  return true;
}

void CudaEvent::synchronize() {
  refuse_if_capturing_cuda("Event::synchronize");
  CUDA_CHECK(cudaEventSynchronize(event_));
}

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
