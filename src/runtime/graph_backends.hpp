// SPDX-License-Identifier: MIT
// The seam between capture_graph() and the backends' graphs (as cuda_backend.hpp is for
// devices): host/host_graph.cpp and cuda/cuda_graph.cpp implement these; a build without
// CUDA links cuda_graph_unavailable.cpp, which throws.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/graph.hpp"

namespace towers {

/// capture_graph() on the host backend.
std::unique_ptr<Graph> capture_host_graph(Trace& trace, Stream& origin,
                                          const std::function<void()>& enqueue);
/// capture_graph() on the cuda backend.
std::unique_ptr<Graph> capture_cuda_graph(Trace& trace, Stream& origin,
                                          const std::function<void()>& enqueue);

/// The CaptureError message both backends give for op `op` launched inside a capture on
/// `stream` ("host:0 stream 2"), which joined it without prepare_for_capture().
std::string unprepared_stream_message(std::string_view op, const std::string& stream);

}  // namespace towers
