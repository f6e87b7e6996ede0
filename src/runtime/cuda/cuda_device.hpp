// SPDX-License-Identifier: MIT
// CudaDevice, CudaStream, CudaEvent: the runtime on real GPUs.
//
// Each method is one checked CUDA call (plus cudaSetDevice, since CUDA keeps a "current
// device" per host thread and every call acts on it). Errors throw std::runtime_error
// with the failing call, file:line and CUDA's message (base/cuda/check.hpp).
// Traced ops are bracketed by a CUDA event pair and an NVTX range of the same name.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/device.hpp"
#include "runtime/kernel_stamps.hpp"
#include "trace/trace.hpp"

namespace towers {

/// One GPU. Its streams are non-blocking CUDA streams.
class CudaDevice final : public Device {
 public:
  /// Device `ordinal` (0-based CUDA ordinal); records a clock epoch for the trace.
  CudaDevice(int ordinal, Trace& trace);
  ~CudaDevice() override;

  Backend backend() const override { return Backend::kCuda; }
  int index() const override { return ordinal_; }
  std::string name() const override { return name_; }
  std::unique_ptr<Stream> create_stream() override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Event> create_wait_event() override;
  Buffer allocate_pinned(std::size_t bytes) override;
  void synchronize() override;

  /// Host microseconds (trace clock) at which `epoch()` completed.
  double epoch_host_us() const { return epoch_host_us_; }
  /// An event recorded on this device when it was opened: zero of its trace times.
  const std::shared_ptr<Event>& epoch() const { return epoch_; }

  /// The ring of kernel stamp records of this device (kKernelStampRecords). Made with the
  /// device, not on first use: cudaMalloc may synchronize the device, which inside a step
  /// could stall a rendezvous probe that waits for towers not yet enqueued.
  const std::shared_ptr<KernelStampBuffer>& kernel_stamps() const { return stamps_; }
  /// Maps this device's %globaltimer onto the trace's axis.
  const StampClock& stamp_clock() const { return stamp_clock_; }
  /// Records in the ring: far more kernels than a step of any chapter launches.
  static constexpr std::size_t kKernelStampRecords = 1 << 15;

 protected:
  Buffer allocate_memory(std::size_t bytes, MemoryCategory category) override;

 private:
  void make_kernel_stamps();

  int ordinal_;
  Trace& trace_;
  std::string name_;
  std::shared_ptr<Event> epoch_;
  double epoch_host_us_ = 0;
  std::atomic<int> next_stream_index_{0};
  std::shared_ptr<KernelStampBuffer> stamps_;
  std::size_t stamp_bytes_ = 0;  // the ring's, counted in the ledger as kWorkspace
  StampClock stamp_clock_;
};

/// Launches a one-thread kernel on `stream` that writes %globaltimer to `out` (device
/// memory). Used to anchor a device's kernel stamps (probe_kernels.cu).
void launch_cuda_read_clock(cudaStream_t stream, unsigned long long* reading,
                            unsigned long long* tick);

/// Loads the probe kernels (busy, rendezvous, its reset, the clock read) into CUDA device
/// `ordinal`'s context now, for lazy module loading (probe_kernels.cu).
void preload_cuda_probe_kernels(int ordinal);

/// A CUDA event, made on one device; record it on a stream of that device.
class CudaEvent final : public Event {
 public:
  /// An event on CUDA device `ordinal`; without `timing`, elapsed_ms_since() throws
  /// (cudaEventDisableTiming: cheaper to record and wait for).
  CudaEvent(int ordinal, bool timing);
  ~CudaEvent() override;
  bool query() override;
  void synchronize() override;
  float elapsed_ms_since(Event& start) override;
  /// The underlying handle.
  cudaEvent_t handle() const { return event_; }
  /// Counts one Stream::record of this event and returns its number (1, 2, ...): the
  /// trace's record and wait markers pair a wait with the record it waits for by it.
  std::uint64_t count_record() { return records_.fetch_add(1, std::memory_order_relaxed) + 1; }
  /// The number of the most recent record counted (0: never recorded).
  std::uint64_t records() const { return records_.load(std::memory_order_relaxed); }

 private:
  int ordinal_;
  bool timing_;
  cudaEvent_t event_ = nullptr;
  std::atomic<std::uint64_t> records_{0};
};

}  // namespace towers
