// SPDX-License-Identifier: MIT
#include "runtime/graph.hpp"

#include "runtime/graph_backends.hpp"

namespace towers {

std::unique_ptr<Graph> capture_graph(Runtime& runtime, Stream& origin,
                                     const std::function<void()>& enqueue) {
  if (origin.device().backend() != runtime.backend()) {
    throw std::invalid_argument("capture_graph: the origin stream belongs to another runtime");
  }
  if (runtime.backend() == Backend::kHost) return capture_host_graph(runtime.trace(), origin, enqueue);
  return capture_cuda_graph(runtime.trace(), origin, enqueue);
}

void prepare_for_capture(Stream& stream) {
  // Makes the stream's cuBLAS handle and workspace now: cudaMalloc cannot be captured.
  stream.launch("prepare capture", [] {}, [](const CudaLaunchContext& ctx) { (void)ctx.blas(); });
}

}  // namespace towers
