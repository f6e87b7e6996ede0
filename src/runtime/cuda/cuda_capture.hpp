// SPDX-License-Identifier: MIT
// What the cuda backend refuses while this thread captures a graph (cuda_graph.cpp keeps
// the thread's state). The capture runs in cudaStreamCaptureModeThreadLocal, where CUDA
// itself fails a synchronize or an allocation from this thread; the backend refuses them
// first, naming the op, with the host backend's words: a CaptureError, as documented in
// runtime/graph.hpp, rather than CUDA's code from deep inside the call.
#pragma once

#include <string_view>

namespace towers {

/// Throws CaptureError naming `op` when the calling thread is capturing a cuda graph.
void refuse_if_capturing_cuda(std::string_view op);

/// Whether the calling thread is inside capture_cuda_graph() (cheap: a thread-local flag).
bool capturing_cuda_on_this_thread();

}  // namespace towers
