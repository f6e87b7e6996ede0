// SPDX-License-Identifier: MIT
#include "runtime/cuda/cuda_stream.hpp"

#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <memory>
#include <string>

#include "base/cuda/check.hpp"
#include "runtime/cuda/cuda_capture.hpp"
#include "runtime/graph_backends.hpp"
#include "runtime/span_resolver.hpp"

namespace towers {
namespace {

// Each cuBLAS handle gets a workspace of its own, made with the handle, outside any
// capture. cuBLAS picks its kernels by the workspace it may use; without a fixed one it
// uses its own pool eagerly but none under graph capture (it cannot allocate there), so a
// captured GEMM may run other kernels than the eager one, and "graph != eager" would prove
// nothing. 32 MiB is what cuBLAS itself reserves on Hopper (sm_90); 4 MiB elsewhere.
constexpr std::size_t kBlasWorkspaceBytes = std::size_t{32} << 20;

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
  if (blas_workspace_) {
    (void)cudaFree(blas_workspace_);  // teardown: nothing to do on failure
    device_.memory().remove(MemoryCategory::kWorkspace, kBlasWorkspaceBytes);
  }
  (void)cudaStreamDestroy(stream_);
}

template <typename Enqueue>
void CudaStream::traced(std::string_view name, bool stamped, Enqueue&& enqueue) {
  CUDA_CHECK(cudaSetDevice(device_.index()));
  if (!trace_.enabled()) {
    enqueue(nullptr);
    return;
  }
  auto start = std::make_shared<CudaEvent>(device_.index(), /*timing=*/true);
  auto end = std::make_shared<CudaEvent>(device_.index(), /*timing=*/true);
  // The op's kernels stamp their own run (runtime/kernel_stamps.hpp): the event pair says
  // when the stream held the op, the stamps when its kernels were on the GPU.
  std::shared_ptr<OpKernelStamps> stamps;
  if (stamped) {
    stamps = std::make_shared<OpKernelStamps>(device_.kernel_stamps(), device_.stamp_clock());
  }
  const std::string label = traced_name(name);
  CUDA_CHECK(cudaEventRecord(start->handle(), stream_));
  nvtxRangePushA(label.c_str());  // Nsight Systems shows the same names as our trace
  enqueue(stamps.get());
  nvtxRangePop();
  CUDA_CHECK(cudaEventRecord(end->handle(), stream_));
  TraceEvent span{device_.index(), index_, tower(), trace_.step(), label, 0, 0};
  // Resolved by Trace::collect() once `end` has completed; until then the span stays
  // pending (a producer thread's copy may be in flight while the step is collected).
  trace_.add_pending(std::move(span),
                     resolve_when_complete({device_.epoch(), device_.epoch_host_us(),
                                            std::move(start), std::move(end), std::move(stamps)}));
}

void CudaStream::launch(std::string_view name, HostWork /*host*/, CudaWork cuda) {
  // A launch on a stream that joined the capture unprepared would make its cuBLAS handle
  // here (cudaMalloc under capture, which CUDA refuses). Refused first, in the same words
  // as the host backend, for every launch: the host cannot tell which would need it.
  if (!prepared_for_capture() && capturing_cuda_on_this_thread() && in_capture()) {
    throw CaptureError(unprepared_stream_message(
        "launch '" + traced_name(name) + "'", device_.name() + " stream " + std::to_string(index_)));
  }
  trace_.count_host_enqueue();
  traced(name, /*stamped=*/true, [&](KernelStampSink* stamps) {
    cuda(CudaLaunchContext{stream_, [this] { return static_cast<void*>(blas_handle()); },
                           device_.index(), stamps});
  });
}

bool CudaStream::in_capture() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream_, &status));
  return status == cudaStreamCaptureStatusActive;
}

cublasHandle_t CudaStream::blas_handle() {
  if (blas_ == nullptr) {
    // Made on first use: streams that never run a GEMM (communication, copies, probes)
    // never pay for a handle, nor for its destruction (cublasDestroy synchronizes the
    // device). Before a capture, prepare_for_capture() makes it: the workspace allocation
    // cannot be captured (launch() refuses an unprepared stream inside a capture).
    CUBLAS_CHECK(cublasCreate(&blas_));
    CUBLAS_CHECK(cublasSetStream(blas_, stream_));
    CUDA_CHECK(cudaMalloc(&blas_workspace_, kBlasWorkspaceBytes));
    device_.memory().add(MemoryCategory::kWorkspace, kBlasWorkspaceBytes);  // in the ledger too
    CUBLAS_CHECK(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspaceBytes));
  }
  return blas_;
}

void CudaStream::copy(void* dst, const void* src, std::size_t bytes, std::string_view name) {
  trace_.count_host_enqueue();
  // cudaMemcpyDefault: unified addressing tells host, device and peer memory apart.
  // Copies run on copy engines, not in our kernels: nothing stamps them.
  traced(name, /*stamped=*/false, [&](KernelStampSink*) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  });
}

void CudaStream::fill_zero(void* dst, std::size_t bytes, std::string_view name) {
  trace_.count_host_enqueue();
  traced(name, /*stamped=*/false,
         [&](KernelStampSink*) { CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_)); });
}

void CudaStream::record(Event& event) {
  trace_.count_host_enqueue();
  CUDA_CHECK(cudaSetDevice(device_.index()));
  auto& cuda_event = dynamic_cast<CudaEvent&>(event);
  CUDA_CHECK(cudaEventRecord(cuda_event.handle(), stream_));
  const std::uint64_t record = cuda_event.count_record();
  if (trace_.enabled()) trace_marker(TraceKind::kRecord, event.trace_id(), record, nullptr);
}

void CudaStream::wait(Event& event) {
  trace_.count_host_enqueue();
  CUDA_CHECK(cudaSetDevice(device_.index()));
  auto& cuda_event = dynamic_cast<CudaEvent&>(event);
  // Traced (and recorded at all: a wait on a never-recorded event waits for nothing, and
  // the host backend notes none): a timing event before the wait says when the stream
  // reached it; trace_marker's, after it, when the stream got past it.
  std::shared_ptr<CudaEvent> reached;
  if (trace_.enabled() && cuda_event.records() > 0) {
    reached = std::make_shared<CudaEvent>(device_.index(), /*timing=*/true);
    CUDA_CHECK(cudaEventRecord(reached->handle(), stream_));
  }
  CUDA_CHECK(cudaStreamWaitEvent(stream_, cuda_event.handle(), 0));
  if (reached) {
    trace_marker(TraceKind::kWait, event.trace_id(), cuda_event.records(), std::move(reached));
  }
}

void CudaStream::trace_marker(TraceKind kind, int event_id, std::uint64_t record,
                              std::shared_ptr<CudaEvent> reached) {
  auto passed = std::make_shared<CudaEvent>(device_.index(), /*timing=*/true);
  CUDA_CHECK(cudaEventRecord(passed->handle(), stream_));
  std::shared_ptr<Event> start = reached ? std::shared_ptr<Event>(std::move(reached)) : passed;
  Trace::Resolve times = resolve_when_complete(
      {device_.epoch(), device_.epoch_host_us(), std::move(start), std::move(passed), nullptr});
  trace_.add_pending(
      event_marker(kind, device_.index(), index_, tower(), trace_.step(), event_id, record),
      [times = std::move(times)](TraceEvent& marker) {
        if (!times(marker)) return false;  // not yet reached: the next collect()
        // times set start_us (reached) and end_us (passed); a marker is the instant it passed.
        marker.waited_from_us = marker.kind == TraceKind::kWait ? marker.start_us : 0;
        marker.start_us = marker.end_us;
        return true;
      });
}

void CudaStream::synchronize() {
  refuse_if_capturing_cuda("Stream::synchronize on " + device_.name() + " stream " + std::to_string(index_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace towers
