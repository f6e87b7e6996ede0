// SPDX-License-Identifier: MIT
// CudaStream: a non-blocking cudaStream_t with its own cuBLAS handle (made on first use).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "runtime/cuda/cuda_device.hpp"
#include "runtime/stream.hpp"

namespace towers {

/// A stream of the cuda backend. The destructor waits for its work, then destroys it.
class CudaStream final : public Stream {
 public:
  /// Stream `index` of `device` (cudaStreamNonBlocking); ops are traced into `trace`.
  CudaStream(CudaDevice& device, int index, Trace& trace);
  ~CudaStream() override;

  Device& device() override { return device_; }
  int index() const override { return index_; }
  void launch(std::string_view name, HostWork host, CudaWork cuda) override;
  void copy(void* dst, const void* src, std::size_t bytes, std::string_view name) override;
  void fill_zero(void* dst, std::size_t bytes, std::string_view name) override;
  void record(Event& event) override;
  void wait(Event& event) override;
  void synchronize() override;

 private:
  // Runs `enqueue(KernelStampSink*)` (which must only enqueue on stream_) as one traced op
  // named `name`. When tracing and `stamped`, the sink stamps the op's kernels; else null.
  template <typename Enqueue>
  void traced(std::string_view name, bool stamped, Enqueue&& enqueue);
  // The stream's cuBLAS handle with its fixed workspace, made on the first call.
  cublasHandle_t blas_handle();
  // Whether stream_ is being captured now (cudaStreamIsCapturing).
  bool in_capture() const;
  // Adds a record or wait marker of `event_id`'s record number `record`, timed by a timing
  // event recorded now on stream_ (and, for a wait, by `reached`, recorded before it).
  // Record numbers are counted per CudaEvent on the host; a record inside a captured graph
  // is counted once, at capture, so waits on it after a replay name that record.
  void trace_marker(TraceKind kind, int event_id, std::uint64_t record,
                    std::shared_ptr<CudaEvent> reached);

  CudaDevice& device_;
  int index_;
  Trace& trace_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* blas_workspace_ = nullptr;  // the handle's fixed workspace (cublasSetWorkspace)
};

}  // namespace towers
