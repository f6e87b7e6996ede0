// SPDX-License-Identifier: MIT
#include "runtime/graph.hpp"

#include "runtime/graph_backends.hpp"

namespace towers {

std::unique_ptr<Graph> capture_graph(Runtime& runtime, Stream& origin,
                                     const std::function<void()>& enqueue) {
  if (origin.device().backend() != runtime.backend()) {
    throw std::invalid_argument("capture_graph: the origin stream belongs to another runtime");
  }
  // Each backend prepares the origin, which is in every capture, so that no caller can
  // forget it (chapter 7's meeting stream once made its cuBLAS handle inside the capture).
  if (runtime.backend() == Backend::kHost) return capture_host_graph(runtime.trace(), origin, enqueue);
  return capture_cuda_graph(runtime.trace(), origin, enqueue);
}

void prepare_for_capture(Stream& stream) {
  if (stream.prepared_for_capture_) return;
  // Makes the stream's cuBLAS handle and workspace now: cudaMalloc cannot be captured.
  // The kernel stamp ring needs nothing here: each device makes its own when it opens.
  stream.launch("prepare capture", [] {}, [](const CudaLaunchContext& ctx) { (void)ctx.blas(); });
  stream.prepared_for_capture_ = true;
}

std::string unprepared_stream_message(std::string_view op, const std::string& stream) {
  return "cannot capture " + std::string(op) + " on " + stream +
         ": the stream joined the capture without being prepared. Call "
         "prepare_for_capture() on every stream that will join, before capture_graph() "
         "(on a GPU the stream would make its cuBLAS handle and workspace now, an allocation "
         "a graph cannot hold; CUDA refuses it)";
}

}  // namespace towers
