// SPDX-License-Identifier: MIT
// capture_cuda_graph() in a build without CUDA: no cuda stream can exist, so reaching it
// is a bug (see cuda_unavailable.cpp).
#include <stdexcept>

#include "runtime/graph_backends.hpp"

namespace towers {

std::unique_ptr<Graph> capture_cuda_graph(Trace&, Stream&, const std::function<void()>&) {
  throw std::logic_error("towers was built without CUDA");
}

}  // namespace towers
