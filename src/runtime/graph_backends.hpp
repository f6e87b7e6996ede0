// SPDX-License-Identifier: MIT
// The seam between capture_graph() and the backends' graphs (as cuda_backend.hpp is for
// devices): host/host_graph.cpp and cuda/cuda_graph.cpp implement these; a build without
// CUDA links cuda_graph_unavailable.cpp, which throws.
#pragma once

#include <functional>
#include <memory>

#include "runtime/graph.hpp"

namespace towers {

/// capture_graph() on the host backend.
std::unique_ptr<Graph> capture_host_graph(Trace& trace, Stream& origin,
                                          const std::function<void()>& enqueue);
/// capture_graph() on the cuda backend.
std::unique_ptr<Graph> capture_cuda_graph(Trace& trace, Stream& origin,
                                          const std::function<void()>& enqueue);

}  // namespace towers
