// SPDX-License-Identifier: MIT
// kernels/cuda/scalar_updates.hpp in a build without CUDA: each launcher throws (see
// cuda_unavailable.cpp).
#include <stdexcept>

#include "kernels/cuda/scalar_updates.hpp"

namespace towers::cuda {

void sgd_update_at(const CudaLaunchContext&, int, const float*, const float*, float*) {
  throw std::logic_error("towers was built without CUDA");
}
void ema_update_at(const CudaLaunchContext&, int, const float*, const float*, float*) {
  throw std::logic_error("towers was built without CUDA");
}

}  // namespace towers::cuda
