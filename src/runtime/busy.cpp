// SPDX-License-Identifier: MIT
#include "runtime/busy.hpp"

#include <chrono>
#include <thread>

#include "runtime/cuda_backend.hpp"

namespace towers {

void busy_kernel(Stream& stream, double ms, std::string_view name) {
  stream.launch(
      name,
      [ms] { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); },
      [ms](const CudaLaunchContext& ctx) { launch_cuda_busy_kernel(ctx, ms); });
}

}  // namespace towers
